"""What a restore of a compacted topic replays, counted from hand-made records: per partition the
records, the keys whose latest record is a value, the tombstones, the bytes and the time span;
summed per topic into the waste and the shape the policy reads. Which topics are candidates
(compacted, matching the patterns, never Kafka's internal ones). The broker is replaced at
``describe_topics``/``cluster_metadata``/``replay``: the Kafka side is the integration tier's."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from boardstream.compaction import measure
from boardstream.compaction.measure import (
    PartitionMeasurement,
    TopicMeasurement,
    _PartitionTally,
    compacted_topics,
    is_compacted,
    measure_topic,
)
from boardstream.compaction.policy import TopicShape
from boardstream.errors import BoardstreamError
from boardstream.kafka.topics import TopicDescription
from boardstream.settings import Settings


class Message:
    def __init__(self, partition: int, key: bytes | None, value: bytes | None, ts: int) -> None:
        self._partition, self._key, self._value, self._ts = partition, key, value, ts

    def partition(self) -> int:
        return self._partition

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def timestamp(self) -> tuple[int, int]:
        return (1, self._ts)  # TIMESTAMP_CREATE_TIME


def partition(n: int, records: int, live: int, first: int | None, last: int | None):
    return PartitionMeasurement(n, records, live, 1, 10 * records, first, last)


def test_totals_waste_and_shape() -> None:
    m = TopicMeasurement(
        "member",
        [partition(0, 60, 20, 1_000, 9_000), partition(1, 40, 20, 3_000, 11_000)],
        {},
        1.5,
    )
    assert (m.records, m.live_keys, m.waste) == (100, 40, pytest.approx(0.6))
    assert m.shape() == TopicShape(
        topic="member",
        partitions=2,
        records=100,
        live_keys=40,
        tombstones=2,
        bytes=1_000,
        observed_rate=10.0,  # 100 records from 1 s to 11 s
    )


def test_an_empty_topic_wastes_nothing_and_has_no_rate() -> None:
    m = TopicMeasurement("t", [partition(0, 0, 0, None, None)], {}, 0.0)
    assert m.waste == 0.0
    assert m.shape().observed_rate is None


def test_records_all_at_one_time_have_no_rate() -> None:
    m = TopicMeasurement("t", [partition(0, 5, 5, 7_000, 7_000)], {}, 0.0)
    assert m.shape().observed_rate is None


@pytest.mark.parametrize(
    ("policy", "compacted"),
    [
        ("compact", True),
        ("compact,delete", True),
        ("delete,compact", True),
        ("delete", False),
        ("compaction", False),
        ("", False),
        (None, False),
    ],
)
def test_is_compacted(policy: str | None, compacted: bool) -> None:
    assert is_compacted(policy) is compacted


def test_a_partition_tally_keeps_the_latest_kind_per_key() -> None:
    tally = _PartitionTally()
    for message in (
        Message(0, b"k1", b"v1", 5_000),
        Message(0, b"k2", b"value", 2_000),
        Message(0, b"k1", None, 9_000),  # k1 deleted
        Message(0, b"k3", None, 0),  # a timestamp of 0 or less is unknown
        Message(0, b"k3", b"v", -1),  # ...and k3 comes back
        Message(0, None, b"no-key", 3_000),
    ):
        tally.add(message)
    assert tally.result(4) == PartitionMeasurement(
        partition=4,
        records=6,
        live_keys=3,  # k2, k3 and the null key
        tombstones=2,
        bytes=(2 + 2) + (2 + 5) + 2 + 2 + (2 + 1) + 6,
        first_timestamp_ms=2_000,
        last_timestamp_ms=9_000,
    )


def test_an_empty_partition() -> None:
    assert _PartitionTally().result(0) == PartitionMeasurement(0, 0, 0, 0, 0, None, None)


def description(name: str, policy: str | None, ends: dict[int, int] | None = None):
    configs = {} if policy is None else {"cleanup.policy": (policy, False)}
    ends = ends or {0: 0}
    return TopicDescription(name, configs, ends, dict.fromkeys(ends, 0))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(var_dir=tmp_path)


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Topics by name with their cleanup.policy; records what describe_topics was asked."""
    state: dict[str, Any] = {
        "policies": {
            "member": "compact",
            "member-dlq": "delete",
            "board-by-city": "compact,delete",
            "other": "compact",
            "__consumer_offsets": "compact",
        },
        "described": [],
    }
    monkeypatch.setattr(
        measure,
        "cluster_metadata",
        lambda _a, _s: SimpleNamespace(topics=dict.fromkeys(state["policies"])),
    )

    def describe(_admin, _settings, names):
        state["described"].append(names)
        return [description(name, state["policies"][name]) for name in names]

    monkeypatch.setattr(measure, "describe_topics", describe)
    return state


def test_candidates_are_compacted_matching_and_never_internal(cluster, settings) -> None:
    assert compacted_topics("admin", settings) == ["board-by-city", "member", "other"]
    assert cluster["described"] == [["board-by-city", "member", "member-dlq", "other"]]
    assert compacted_topics("admin", settings, ["member*", "board-*"], ["*-city"]) == ["member"]
    assert cluster["described"][-1] == ["member", "member-dlq"]
    assert compacted_topics("admin", settings, ["__*"]) == []
    assert compacted_topics("admin", settings, ["Member"]) == []  # patterns are case-sensitive
    assert len(cluster["described"]) == 2  # nothing matched: nothing to describe


def test_measure_replays_each_partition_to_its_end(monkeypatch, settings) -> None:
    ends = {0: 3, 1: 1, 2: 0}
    desc = description("member", "compact", ends)
    monkeypatch.setattr(measure, "describe_topics", lambda _a, _s, names: [desc])
    replayed = []

    def replay(_settings, topic, end_offsets, handle, advanced):
        replayed.append((topic, end_offsets, advanced))
        for message in (
            Message(0, b"a", b"1", 1_000),
            Message(1, b"b", b"22", 2_000),
            Message(0, b"a", b"3", 3_000),
            Message(0, b"c", None, 4_000),
        ):
            handle(message)

    monkeypatch.setattr(measure, "replay", replay)
    m = measure_topic("admin", settings, "member", show_progress=False)
    assert replayed == [("member", ends, None)]
    assert (m.topic, m.configs) == ("member", {"cleanup.policy": ("compact", False)})
    assert m.partitions == [
        PartitionMeasurement(0, 3, 1, 1, 5, 1_000, 4_000),
        PartitionMeasurement(1, 1, 1, 0, 3, 2_000, 2_000),
        PartitionMeasurement(2, 0, 0, 0, 0, None, None),
    ]
    assert m.seconds >= 0


def test_measure_refuses_a_topic_that_is_not_compacted(monkeypatch, settings) -> None:
    monkeypatch.setattr(
        measure, "describe_topics", lambda _a, _s, names: [description(names[0], None)]
    )
    monkeypatch.setattr(measure, "replay", lambda *args: pytest.fail("replayed"))
    with pytest.raises(
        BoardstreamError, match=r"^topic board is not compacted \(cleanup.policy\)$"
    ):
        measure_topic("admin", settings, "board", show_progress=False)
