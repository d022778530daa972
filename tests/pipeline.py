"""A test harness around the real pipeline, shared by the integration, adversarial, DAG and fault
tests: its own topics on the session broker, records produced with chosen timestamps, the join
and sink run available-now, outputs read back."""

from __future__ import annotations

import itertools
import json
import random
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from boardstream import sink
from boardstream.generator.declared_records import DeclaredRecords
from boardstream.joins.job import JoinJobConfig, start_join
from boardstream.joins.member_table import JoinOptions
from boardstream.joins.topics import SHIPPED_PIPELINE, Deployed
from boardstream.kafka.clients import DeliveryErrors, admin_client
from boardstream.kafka.limits import topic_message_limits
from boardstream.kafka.topics import create_topics, platform_topics
from boardstream.pipelines import SHIPPED, query_name
from boardstream.pipelines import Pipeline as Declaration
from boardstream.pipelines.model import Outputs
from boardstream.settings import Settings
from boardstream.sink.job import SinkJobConfig, SinkTarget
from boardstream.sink.table import SinkTable

_names = itertools.count()


def consume_all(settings: Settings, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """Every record of ``topic`` from the start to its current end, as (key, value)."""
    consumer = Consumer(
        {**settings.to_confluent(), "group.id": f"check-{topic}", "enable.auto.commit": False}
    )
    metadata = consumer.list_topics(topic, timeout=10)
    partitions = [TopicPartition(topic, p, 0) for p in metadata.topics[topic].partitions]
    ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in partitions}
    consumer.assign(partitions)
    records: list[tuple[bytes | None, bytes | None]] = []
    position = dict.fromkeys(ends, 0)
    while any(position[p] < ends[p] for p in ends):
        message = consumer.poll(5)
        assert message is not None, f"timed out reading {topic}: at {position}, ends {ends}"
        assert message.error() is None, message.error()
        position[message.partition()] = message.offset() + 1
        records.append((message.key(), message.value()))
    consumer.close()
    return records


def alter_topics(settings: Settings, changes: dict[str, dict[str, str]]) -> None:
    """Set configs on topics (``incremental_alter_configs``), as an operator would."""
    resources = [
        ConfigResource(
            ResourceType.TOPIC,
            topic,
            incremental_configs=[
                ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
                for name, value in configs.items()
            ],
        )
        for topic, configs in changes.items()
    ]
    admin = admin_client(settings)  # held: a collected client fails its futures
    for future in admin.incremental_alter_configs(resources).values():
        future.result()


def query(database_url: str, sql: str) -> list[Any]:
    """Rows of ``sql`` against the board_detail database."""
    engine = sa.create_engine(database_url)
    with engine.connect() as connection:
        rows = connection.execute(sa.text(sql)).all()
    engine.dispose()
    return rows


def run_sink(
    spark: Any, settings: Settings, config: SinkJobConfig, target: SinkTarget | None = None
) -> None:
    """The sink's query (``target``'s, board_detail's if None) to its end under its
    checkpoint's lease, as its job runs it: its writes are fenced by that lease, and refused
    without it."""
    with sink.leased(settings, config):
        query = sink.start(spark, settings, config, target)
        query.awaitTermination()
    assert query.exception() is None, query.exception()


def on_own_topics(name: str, prefix: str) -> dict[str, Any]:
    """The shipped declaration ``name`` with every topic ``<prefix>-``'d: tests share one
    broker, and no two may share a topic."""
    data = yaml.safe_load((SHIPPED / f"{name}.yml").read_text())
    for side in ("stream", "table"):
        data[side]["topic"] = f"{prefix}-{data[side]['topic']}"
    derived = Outputs.derived(data["name"])
    data["outputs"] = {part: f"{prefix}-{topic}" for part, topic in derived.items()}
    return data


class Pipeline:
    """One pipeline on topics of its own: the shipped board_detail on the settings' (prefixed)
    topics by default, or another shipped declaration (``declared``) on its own prefixed
    topics, so a suite runs unchanged against either."""

    def __init__(
        self,
        kafka: Settings,
        spark: Any,
        workdir: Path,
        engine: str = JoinJobConfig.engine,
        declared: str = SHIPPED_PIPELINE,
        **settings: Any,
    ) -> None:
        self.engine = engine  # the join's stateful operator
        # Tests stamp records with chosen times, many of them long past: topics that kept 7 days
        # would lose them at the broker's next retention check (every 10 s) mid-test. A test of
        # retention sets its own.
        settings.setdefault("topic_retention_ms", -1)
        prefix = f"p{next(_names)}"
        self.settings = kafka.with_topic_prefix(prefix, **settings)
        self.declaration = None if declared == SHIPPED_PIPELINE else on_own_topics(declared, prefix)
        self.deployed = (
            Deployed.shipped(self.settings)
            if self.declaration is None
            else Deployed.declared(Declaration.model_validate(self.declaration))
        )
        self.topics = self.deployed.topics
        self.table = SinkTable.of(self.deployed.pipeline)
        self._drawn = DeclaredRecords(self.deployed.pipeline, random.Random(0), 0)
        create_topics(
            admin_client(self.settings),
            self.settings,
            platform_topics(self.settings, topics=self.topics),
        )
        self.spark = spark
        self.workdir = workdir
        self.producer = Producer({**self.settings.to_confluent(), "acks": "all"})

    # -- input ----------------------------------------------------------------------------

    def send(self, topic: str, key: bytes | None, value: bytes | None, ts: int) -> None:
        self.producer.produce(topic, value=value, key=key, timestamp=ts)
        assert self.producer.flush(10) == 0

    def member(
        self, member_id: int, nickname: str, ts: int, modified_at: str = "2025-01-01T00:00:00"
    ) -> None:
        payload = {
            "member_id": member_id,
            "nickname": nickname,
            "city": "Seoul",
            "phone": "010-0000-0000",
            "created_at": "2024-12-01T00:00:00",
            "modified_at": modified_at,
        }
        self.send(
            self.settings.member_topic, str(member_id).encode(), json.dumps(payload).encode(), ts
        )

    def tombstone(self, member_id: int, ts: int) -> None:
        self.send(self.settings.member_topic, str(member_id).encode(), None, ts)

    def board(self, board_id: str, member_id: int, ts: int, created_ts: int | None = None) -> None:
        payload = {
            "id": board_id,
            "member_id": member_id,
            "title": f"title {board_id}",
            "body": "body",
            "created_ts": created_ts if created_ts is not None else ts,
            "created_at": "2025-01-02T00:00:00",
            "modified_at": "2025-01-02T00:00:00",
        }
        self.send(self.settings.board_topic, board_id.encode(), json.dumps(payload).encode(), ts)

    def send_row(self, row: int, ts: int, **fields: object) -> None:
        """Table row ``row`` (its key from the declaration), version time ``ts``: ``fields`` as
        given, the others drawn from the declared types."""
        value = self._drawn.row_with(row, ts, **fields)
        self.send(self.topics.table, self._drawn.key(row), value, ts)

    def send_record(self, record_id: str, row: int, ts: int, **fields: object) -> None:
        """A stream record naming table row ``row``, its event time ``ts``: ``fields`` as given,
        the others drawn from the declared types."""
        value = self._drawn.record_with(record_id, row, ts, **fields)
        self.send(self.topics.stream, record_id.encode(), value, ts)

    def allow_records_up_to(self, topic: str, size: int) -> None:
        """Raise ``topic``'s max.message.bytes to ``size`` and wait until the broker applies it."""
        admin = admin_client(self.settings)
        entry = ConfigEntry(
            "max.message.bytes", str(size), incremental_operation=AlterConfigOpType.SET
        )
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result()
        deadline = time.monotonic() + 10
        while topic_message_limits(admin, self.settings, [topic])[topic] != size:
            assert time.monotonic() < deadline, f"{topic} kept its message size limit"
            time.sleep(0.2)

    def send_large(self, topic: str, key: bytes, value: bytes, ts: int) -> None:
        """A record past the producer's default 1 MiB request size."""
        errors = DeliveryErrors()
        limit = max(2 * len(value), 1_000_000)
        producer = Producer({**self.settings.to_confluent(), "message.max.bytes": limit})
        producer.produce(topic, value, key, timestamp=ts, on_delivery=errors)
        assert producer.flush(10) == 0 and errors.count == 0, errors.first

    # -- jobs -----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.deployed.pipeline.name

    @property
    def shipped(self) -> bool:
        """board_detail on the settings' topics, which the jobs join when given no pipeline."""
        return self.name == SHIPPED_PIPELINE

    def declare_in(self, directory: Path) -> Path:
        """This pipeline's declaration (on its own topics) as a file in ``directory``, where the
        commands find a pipeline that ``--pipeline NAME`` names."""
        assert self.declaration is not None, "the shipped pipeline needs no file"
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{self.name}.yml"
        path.write_text(yaml.safe_dump(self.declaration, sort_keys=False))
        return path

    def checkpoint(self, part: str) -> Path:
        """The join's or the sink's (``part``) checkpoint."""
        return self.workdir / f"{self.topics.stream}-{part}"

    def join(
        self,
        max_record_bytes: int = JoinJobConfig.max_record_bytes,
        max_offsets_per_trigger: int | None = None,
        state_buckets: int = 8,
        engine: str | None = None,
        **options: Any,
    ) -> None:
        config = JoinJobConfig(
            engine=engine or self.engine,
            options=JoinOptions.of(self.deployed.pipeline.join, **options),
            max_record_bytes=max_record_bytes,
            max_offsets_per_trigger=max_offsets_per_trigger,
            checkpoint=self.checkpoint("join"),
            state_buckets=state_buckets,
            query=query_name(self.name, "join"),
        )
        query = start_join(self.spark, self.settings, config, self.deployed)
        query.awaitTermination()
        assert query.exception() is None, query.exception()

    def sink(self) -> None:
        config = SinkJobConfig(
            checkpoint=self.checkpoint("sink"), query=query_name(self.name, "sink")
        )
        target = None if self.shipped else SinkTarget(self.deployed.pipeline, self.topics)
        run_sink(self.spark, self.settings, config, target)

    # -- output ---------------------------------------------------------------------------

    def records(self, topic: str) -> list[dict[str, Any]]:
        return [json.loads(value) for _, value in consume_all(self.settings, topic)]

    def detail(self) -> dict[str, dict[str, Any]]:
        """board-detail by board id (asserting each board appears once)."""
        rows = self.records(self.settings.board_detail_topic)
        by_id = {row["board_id"]: row for row in rows}
        assert len(by_id) == len(rows), "a board was joined twice"
        return by_id

    def unmatched(self) -> dict[str, str]:
        return {
            row["board_id"]: row["reason"] for row in self.records(self.settings.unmatched_topic)
        }

    def dead_letters(self) -> list[dict[str, Any]]:
        return self.records(self.settings.dlq_topic)
