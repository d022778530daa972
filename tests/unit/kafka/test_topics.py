"""The platform's topics (boardstream/kafka/topics.py): what they are, the per-topic lines of
``boardstream topics create``, how an existing or concurrently created topic is reported, and
how offsets and configs are described, against a fake admin client passed where the code takes
one (tests/integration/test_topics.py runs the same code on a broker)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import ConfigResource, ConfigSource, NewTopic, OffsetSpec

from boardstream.errors import BoardstreamError
from boardstream.kafka.retention import Retention
from boardstream.kafka.topics import (
    CreateResult,
    TopicDescription,
    TopicSpec,
    create_topics,
    describe_topics,
    platform_topics,
)
from boardstream.settings import Settings

DAY_MS = str(24 * 3600 * 1000)
# The streams' explicit retention: BOARDSTREAM_TOPIC_RETENTION_MS's default, no size limit.
KEPT = {"retention.ms": str(7 * 24 * 3600 * 1000), "retention.bytes": "-1"}
KEPT_LINE = "retention.bytes=-1, retention.ms=604800000"


def settings(**fields: Any) -> Settings:
    values: dict[str, Any] = {
        "bootstrap_servers": "broker:9092",
        "connect_timeout_s": 10.0,
        "security_protocol": "PLAINTEXT",
        "partitions": 3,
        "replication_factor": 1,
    }
    chosen = {k: v for k, v in {**values, **fields}.items() if v is not None}
    return Settings(_env_file=None, **chosen)


class Done:
    def __init__(self, value: Any = None, error: KafkaError | None = None) -> None:
        self.value, self.error = value, error

    def result(self) -> Any:
        if self.error is not None:
            raise KafkaException(self.error)
        return self.value


def topic(partitions: int, leader: int = 1) -> SimpleNamespace:
    return SimpleNamespace(
        partitions={p: SimpleNamespace(leader=leader) for p in range(partitions)}
    )


class FakeAdmin:
    """A cluster of ``topics`` (name -> partition count); create_topics adds topics (with
    leaders) unless ``create_errors`` names an error for them."""

    def __init__(self, topics: dict[str, int], create_errors: dict[str, KafkaError] | None = None):
        self.topics = {name: topic(n) for name, n in topics.items()}
        self.create_errors = create_errors or {}
        self.created: list[tuple[str, int, int, dict[str, str]]] = []
        self.metadata_calls = 0
        self.operation_timeouts: list[float] = []

    def list_topics(self, timeout: float) -> SimpleNamespace:
        self.metadata_calls += 1
        return SimpleNamespace(topics=dict(self.topics))

    def create_topics(self, new: list[NewTopic], operation_timeout: float) -> dict[str, Done]:
        self.operation_timeouts.append(operation_timeout)
        futures = {}
        for t in new:
            self.created.append((t.topic, t.num_partitions, t.replication_factor, dict(t.config)))
            error = self.create_errors.get(t.topic)
            if error is None or error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                self.topics[t.topic] = topic(t.num_partitions)
            futures[t.topic] = Done(error=error)
        return futures


def test_platform_topics() -> None:
    specs = platform_topics(settings(member_partitions=2, board_partitions=6, replication_factor=3))
    stream = {"cleanup.policy": "delete", **KEPT}
    assert specs == [
        TopicSpec("member", 2, 3, {"cleanup.policy": "compact"}),
        TopicSpec("board", 6, 3, stream),
        TopicSpec("board-detail", 3, 3, stream),
        TopicSpec("board-unmatched", 3, 3, stream),
        TopicSpec("board-dlq", 3, 3, stream),
        TopicSpec("board-join-tick", 1, 3, {"cleanup.policy": "delete", "retention.ms": DAY_MS}),
    ]


def test_outputs_keep_at_least_what_an_existing_board_keeps() -> None:
    """board comes from production: an existing one keeping records forever has outputs kept
    forever; board's own spec (used only if it is missing) and the others keep their own."""
    specs = platform_topics(settings(), Retention("delete", None, 10))
    forever = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}
    assert [spec.config for spec in specs[2:5]] == [forever] * 3
    assert specs[1].config == {"cleanup.policy": "delete", **KEPT}
    assert specs[0].config == {"cleanup.policy": "compact"}
    assert specs[5].config == {"cleanup.policy": "delete", "retention.ms": DAY_MS}


def test_on_a_cluster_of_three_every_topic_has_three_replicas_two_in_sync() -> None:
    """brokers=3 alone sets both (Settings derives them); the topic's own config still wins."""
    cluster = settings(brokers=3, replication_factor=None)
    specs = platform_topics(cluster)
    assert {(s.replication_factor, s.config["min.insync.replicas"]) for s in specs} == {(3, "2")}
    assert specs[0] == TopicSpec(
        "member", 3, 3, {"min.insync.replicas": "2", "cleanup.policy": "compact"}
    )
    assert TopicSpec.replicated(cluster, "x", 1, {"min.insync.replicas": "3"}) == TopicSpec(
        "x", 1, 3, {"min.insync.replicas": "3"}
    )
    # One broker: nothing of the kind set, the broker's default applies, as before.
    assert all("min.insync.replicas" not in s.config for s in platform_topics(settings()))


def test_creating_replicated_topics_says_so() -> None:
    admin = FakeAdmin({})
    cluster = settings(brokers=3, replication_factor=None)
    (result,) = create_topics(admin, cluster, platform_topics(cluster)[1:2])
    assert result.line() == (
        f"board: created (3 partitions, 3 replicas, delete, min.insync.replicas=2, {KEPT_LINE})"
    )
    assert admin.created == [
        ("board", 3, 3, {"min.insync.replicas": "2", "cleanup.policy": "delete", **KEPT})
    ]


def test_each_spec_has_a_config_of_its_own() -> None:
    specs = platform_topics(settings())
    specs[1].config["retention.ms"] = "1"
    assert specs[2].config == {"cleanup.policy": "delete", **KEPT}


def test_topics_follow_a_prefix() -> None:
    names = [s.name for s in platform_topics(settings().with_topic_prefix("t"))]
    assert names == [
        "t-member",
        "t-board",
        "t-board-detail",
        "t-board-unmatched",
        "t-board-dlq",
        "t-board-join-tick",
    ]


def test_a_result_line() -> None:
    assert CreateResult("board", True, "3 partitions, delete").line() == (
        "board: created (3 partitions, delete)"
    )
    assert CreateResult("member", False, "2 partitions, compact").line() == (
        "member: exists (2 partitions, compact)"
    )


def test_missing_topics_are_created_and_existing_ones_checked() -> None:
    admin = FakeAdmin(
        {"member": 3, "board": 2},
        create_errors={"board-unmatched": KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "exists")},
    )
    results = create_topics(admin, settings(), platform_topics(settings()))
    assert [r.line() for r in results] == [
        "member: exists (3 partitions, compact)",
        f"board: exists (3 partitions, delete, {KEPT_LINE}; note: it has 2 partitions, settings "
        "ask for 3)",
        f"board-detail: created (3 partitions, delete, {KEPT_LINE})",
        # created meanwhile by someone else
        f"board-unmatched: exists (3 partitions, delete, {KEPT_LINE})",
        f"board-dlq: created (3 partitions, delete, {KEPT_LINE})",
        f"board-join-tick: created (1 partitions, delete, retention.ms={DAY_MS})",
    ]
    stream = {"cleanup.policy": "delete", **KEPT}
    assert admin.created == [
        ("board-detail", 3, 1, stream),
        ("board-unmatched", 3, 1, stream),
        ("board-dlq", 3, 1, stream),
        ("board-join-tick", 1, 1, {"cleanup.policy": "delete", "retention.ms": DAY_MS}),
    ]
    assert admin.operation_timeouts == [10.0]


def test_nothing_is_created_when_every_topic_exists() -> None:
    admin = FakeAdmin({"a": 1})
    spec = TopicSpec("a", 1, 1, {"retention.ms": "5", "cleanup.policy": "compact", "a.b": "c"})
    (result,) = create_topics(admin, settings(), [spec])
    assert result == CreateResult("a", False, "1 partitions, compact, a.b=c, retention.ms=5")
    assert admin.created == []
    assert admin.metadata_calls == 1, "no topic to wait for"


def test_a_refused_creation_is_an_error_naming_the_topic() -> None:
    admin = FakeAdmin({}, create_errors={"x": KafkaError(KafkaError.POLICY_VIOLATION, "no")})
    with pytest.raises(BoardstreamError) as raised:
        create_topics(admin, settings(), [TopicSpec("x", 1, 1)])
    assert str(raised.value) == (
        'creating topic x failed: KafkaError{code=POLICY_VIOLATION,val=44,str="no"}'
    )


def test_created_topics_without_a_leader_time_out() -> None:
    class Leaderless(FakeAdmin):
        def list_topics(self, timeout: float) -> SimpleNamespace:
            answer = super().list_topics(timeout)
            answer.topics = {name: topic(1, leader=-1) for name in answer.topics}
            return answer

    admin = Leaderless({})
    with pytest.raises(BoardstreamError, match=r"^topics x, y have no leader yet$"):
        create_topics(
            admin, settings(connect_timeout_s=0.01), [TopicSpec("x", 1, 1), TopicSpec("y", 1, 1)]
        )


class DescribingAdmin:
    def __init__(self, offsets: dict[str, dict[int, tuple[int, int]]]) -> None:
        """``offsets``: topic -> partition -> (earliest, latest)."""
        self.offsets = offsets
        self.failures: list[KafkaError] = []
        self.offset_calls = 0

    def list_topics(self, timeout: float) -> SimpleNamespace:
        return SimpleNamespace(
            topics={name: topic(len(parts)) for name, parts in self.offsets.items()}
        )

    def describe_configs(
        self, resources: list[ConfigResource], request_timeout: float
    ) -> dict[ConfigResource, Done]:
        def entry(value: str | None, source: ConfigSource) -> SimpleNamespace:
            return SimpleNamespace(value=value, source=source.value)

        configs = {
            "cleanup.policy": entry("compact", ConfigSource.DYNAMIC_TOPIC_CONFIG),
            "retention.ms": entry("604800000", ConfigSource.DEFAULT_CONFIG),
            "max.message.bytes": entry("2000000", ConfigSource.STATIC_BROKER_CONFIG),
            "message.format.version": entry(None, ConfigSource.DEFAULT_CONFIG),
        }
        return {r: Done(configs) for r in resources}

    def list_offsets(
        self, requests: dict[TopicPartition, OffsetSpec], request_timeout: float
    ) -> dict[TopicPartition, Done]:
        self.offset_calls += 1
        if self.failures:
            error = self.failures.pop(0)
            return {tp: Done(error=error) for tp in requests}
        latest = OffsetSpec.latest()
        return {
            tp: Done(SimpleNamespace(offset=self.offsets[tp.topic][tp.partition][spec == latest]))
            for tp, spec in requests.items()
        }


def test_topics_are_described_with_defaults_flagged_and_offsets_per_partition() -> None:
    admin = DescribingAdmin({"t": {0: (0, 10), 1: (4, 7)}})
    (described,) = describe_topics(admin, settings(), ["t"])
    assert described == TopicDescription(
        "t",
        {
            "cleanup.policy": ("compact", False),
            "retention.ms": ("604800000", True),
            "max.message.bytes": ("2000000", True),  # the broker's: deleting nothing restores it
            "message.format.version": (None, True),
        },
        end_offsets={0: 10, 1: 7},
        start_offsets={0: 0, 1: 4},
    )
    assert described.partitions == 2


def test_a_leader_moving_in_is_waited_for() -> None:
    admin = DescribingAdmin({"t": {0: (2, 3)}})
    admin.failures = [KafkaError(KafkaError.LEADER_NOT_AVAILABLE, "moving")]
    (described,) = describe_topics(admin, settings(), ["t"])
    assert (described.start_offsets, described.end_offsets) == ({0: 2}, {0: 3})
    assert admin.offset_calls == 3


def test_a_lasting_offset_error_is_reported() -> None:
    admin = DescribingAdmin({"t": {0: (0, 0)}})
    admin.failures = [KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "denied")]
    with pytest.raises(BoardstreamError) as raised:
        describe_topics(admin, settings(), ["t"])
    assert str(raised.value) == (
        "listing offsets of t failed: "
        'KafkaError{code=TOPIC_AUTHORIZATION_FAILED,val=29,str="denied"}'
    )
