"""The platform's topics: what they are, creating them idempotently, and describing them."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigSource, NewTopic, OffsetSpec

from boardstream.errors import BoardstreamError
from boardstream.kafka.clients import cluster_metadata, require_topics, topic_configs
from boardstream.kafka.retention import (
    PipelineTopics,
    Retention,
    source_and_outputs,
    stream_retention,
)
from boardstream.settings import Settings

# A new topic's partitions answer these until their leader has loaded them.
_LEADER_MOVING = (
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
)


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    config: dict[str, str] = field(default_factory=dict)

    @classmethod
    def replicated(
        cls, settings: Settings, name: str, partitions: int, config: dict[str, str]
    ) -> TopicSpec:
        """A topic replicated as the settings say: their replication factor, and their
        min.insync.replicas (how many replicas must hold a write before acks=all returns)
        unless ``config`` names its own."""
        in_sync = settings.min_insync_replicas
        replication = {} if in_sync is None else {"min.insync.replicas": str(in_sync)}
        return cls(name, partitions, settings.replication_factor, {**replication, **config})


def platform_topics(
    settings: Settings, source: Retention | None = None, topics: PipelineTopics | None = None
) -> list[TopicSpec]:
    """A pipeline's topics (``topics``; the settings', the shipped pipeline's, by default). Its
    table topic is compacted (the latest row per key, null deletes); the rest are streams with
    explicit retention: the stream topic the settings', the join's outputs at least as long as
    the stream topic keeps its records (``source``: an existing stream topic's retention), since
    they are reconciliation's evidence (kafka/retention.py). The join's tick topic carries no
    data, only a record per available-now run: one partition, kept a day."""
    stream_topic, outputs = source_and_outputs(settings, topics)
    table, tick = (
        (settings.member_topic, settings.join_tick_topic)
        if topics is None
        else (topics.table, topics.tick)
    )
    stream = {"cleanup.policy": "delete"}
    kinds = [
        (table, {"cleanup.policy": "compact"}),
        (stream_topic, {**stream, **stream_retention(settings)}),
        *((name, {**stream, **stream_retention(settings, source)}) for name in outputs),
    ]
    specs = [
        TopicSpec.replicated(settings, name, settings.topic_partitions(name), config)
        for name, config in kinds
    ]
    tick_config = {"cleanup.policy": "delete", "retention.ms": str(24 * 3600 * 1000)}
    return [*specs, TopicSpec.replicated(settings, tick, 1, tick_config)]


@dataclass(frozen=True)
class CreateResult:
    topic: str
    created: bool
    detail: str

    def line(self) -> str:
        return f"{self.topic}: {'created' if self.created else 'exists'} ({self.detail})"


def create_topics(
    admin: AdminClient, settings: Settings, specs: list[TopicSpec]
) -> list[CreateResult]:
    """Create missing topics; an existing one is left as is but checked against its spec."""
    existing = cluster_metadata(admin, settings).topics
    results: list[CreateResult] = []
    to_create = [spec for spec in specs if spec.name not in existing]
    futures = (
        admin.create_topics(
            [
                NewTopic(s.name, s.partitions, s.replication_factor, config=s.config)
                for s in to_create
            ],
            operation_timeout=settings.connect_timeout_s,
        )
        if to_create
        else {}
    )
    for spec in specs:
        others = sorted((k, v) for k, v in spec.config.items() if k != "cleanup.policy")
        detail = f"{spec.partitions} partitions, "
        if spec.replication_factor > 1:
            detail += f"{spec.replication_factor} replicas, "
        detail += spec.config.get("cleanup.policy", "delete")
        detail += "".join(f", {name}={value}" for name, value in others)
        if spec.name in futures:
            try:
                futures[spec.name].result()
            except KafkaException as error:
                if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise BoardstreamError(f"creating topic {spec.name} failed: {error}") from None
                results.append(CreateResult(spec.name, False, detail))
                continue
            results.append(CreateResult(spec.name, True, detail))
            continue
        actual = len(existing[spec.name].partitions)
        if actual != spec.partitions:
            detail += f"; note: it has {actual} partitions, settings ask for {spec.partitions}"
        results.append(CreateResult(spec.name, False, detail))
    _wait_for_leaders(admin, settings, [spec.name for spec in to_create])
    return results


def _wait_for_leaders(admin: AdminClient, settings: Settings, topics: list[str]) -> None:
    """Block until every partition of ``topics`` has a leader, so the topics are usable at
    once (a fresh topic briefly answers NOT_LEADER_FOR_PARTITION)."""
    deadline = time.monotonic() + settings.connect_timeout_s
    while topics:
        metadata = cluster_metadata(admin, settings).topics
        pending = [
            topic
            for topic in topics
            if topic not in metadata
            or not metadata[topic].partitions
            or any(p.leader < 0 for p in metadata[topic].partitions.values())
        ]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise BoardstreamError(f"topics {', '.join(pending)} have no leader yet")
        time.sleep(0.2)


@dataclass(frozen=True)
class TopicDescription:
    name: str
    # name -> (value, is_default); a default is any value the topic does not set itself
    # (Kafka's or the broker's), which is what deleting the topic's override brings back.
    configs: dict[str, tuple[str | None, bool]]
    end_offsets: dict[int, int]
    start_offsets: dict[int, int]

    @property
    def partitions(self) -> int:
        return len(self.end_offsets)


def describe_topics(
    admin: AdminClient, settings: Settings, topics: list[str]
) -> list[TopicDescription]:
    """Configs (flagging defaults) and earliest/latest offsets per partition."""
    metadata = require_topics(admin, settings, topics)
    configs = {
        topic: {
            name: (entry.value, entry.source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
            for name, entry in entries.items()
        }
        for topic, entries in topic_configs(admin, settings, topics).items()
    }
    descriptions = []
    for topic in topics:
        partitions = sorted(metadata.topics[topic].partitions)
        descriptions.append(
            TopicDescription(
                topic,
                configs[topic],
                end_offsets=list_offsets(admin, settings, topic, partitions, OffsetSpec.latest()),
                start_offsets=list_offsets(
                    admin, settings, topic, partitions, OffsetSpec.earliest()
                ),
            )
        )
    return descriptions


def list_offsets(
    admin: AdminClient, settings: Settings, topic: str, partitions: list[int], spec: OffsetSpec
) -> dict[int, int]:
    """Offsets per partition; retriable errors (a leader still moving in) are retried."""
    deadline = time.monotonic() + settings.connect_timeout_s
    while True:
        futures = admin.list_offsets(
            {TopicPartition(topic, p): spec for p in partitions},
            request_timeout=settings.connect_timeout_s,
        )
        try:
            return {tp.partition: future.result().offset for tp, future in futures.items()}
        except KafkaException as error:
            transient = error.args[0].retriable() or error.args[0].code() in _LEADER_MOVING
            if not transient or time.monotonic() > deadline:
                raise BoardstreamError(f"listing offsets of {topic} failed: {error}") from None
            time.sleep(0.2)
