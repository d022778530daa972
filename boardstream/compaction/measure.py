"""Measure what a restore of a compacted topic replays: records, live keys, tombstones, bytes.

A restore reads every record from the start of each partition, so that is what is measured: a
plain consumer reads each partition from its earliest offset to its end and keeps, per key,
only whether its latest record is a value or a tombstone. The replay waste is the share of
records read that do not end up as a live key.
"""

from __future__ import annotations

import fnmatch
import time
from dataclasses import dataclass

from confluent_kafka import Message
from confluent_kafka.admin import AdminClient

from boardstream.compaction.policy import TopicShape
from boardstream.errors import BoardstreamError
from boardstream.kafka.clients import cluster_metadata
from boardstream.kafka.replay import replay
from boardstream.kafka.topics import describe_topics
from boardstream.progress import Progress
from boardstream.settings import Settings


@dataclass(frozen=True)
class PartitionMeasurement:
    partition: int
    records: int
    live_keys: int
    tombstones: int  # tombstone records read (a restore replays them too)
    bytes: int  # key plus value bytes
    first_timestamp_ms: int | None
    last_timestamp_ms: int | None


@dataclass(frozen=True)
class TopicMeasurement:
    topic: str
    partitions: list[PartitionMeasurement]
    configs: dict[str, tuple[str | None, bool]]  # name -> (value, is_default)
    seconds: float  # how long the replay took

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    @property
    def live_keys(self) -> int:
        return sum(p.live_keys for p in self.partitions)

    @property
    def waste(self) -> float:
        """1 - live keys / records read: 0 when a restore reads exactly one record per key."""
        return 1 - self.live_keys / self.records if self.records else 0.0

    def shape(self) -> TopicShape:
        firsts = [p.first_timestamp_ms for p in self.partitions if p.first_timestamp_ms]
        lasts = [p.last_timestamp_ms for p in self.partitions if p.last_timestamp_ms]
        span_s = (max(lasts) - min(firsts)) / 1000 if firsts and lasts else 0.0
        return TopicShape(
            topic=self.topic,
            partitions=len(self.partitions),
            records=self.records,
            live_keys=self.live_keys,
            tombstones=sum(p.tombstones for p in self.partitions),
            bytes=sum(p.bytes for p in self.partitions),
            observed_rate=self.records / span_s if span_s > 0 else None,
        )


def compacted_topics(
    admin: AdminClient,
    settings: Settings,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
) -> list[str]:
    """Topics whose ``cleanup.policy`` contains ``compact`` and whose name matches an
    ``include`` pattern (all, if none) and no ``exclude`` pattern. Kafka's internal topics
    (``__consumer_offsets`` and the like) are never candidates."""
    names = sorted(
        name
        for name in cluster_metadata(admin, settings).topics
        if not name.startswith("__")
        and (not include or any(fnmatch.fnmatchcase(name, p) for p in include))
        and not any(fnmatch.fnmatchcase(name, p) for p in exclude or [])
    )
    if not names:
        return []
    return [
        d.name
        for d in describe_topics(admin, settings, names)
        if is_compacted(d.configs.get("cleanup.policy", (None, True))[0])
    ]


def is_compacted(cleanup_policy: str | None) -> bool:
    return "compact" in (cleanup_policy or "").split(",")


def measure_topic(
    admin: AdminClient,
    settings: Settings,
    topic: str,
    show_progress: bool = True,
) -> TopicMeasurement:
    """Replay ``topic`` as a restore would and count what it reads (committed records only)."""
    (description,) = describe_topics(admin, settings, [topic])
    if not is_compacted(description.configs.get("cleanup.policy", (None, True))[0]):
        raise BoardstreamError(f"topic {topic} is not compacted (cleanup.policy)")
    ends = description.end_offsets
    total = sum(ends[p] - description.start_offsets[p] for p in ends)
    progress = Progress(f"measure {topic}", total) if show_progress else None
    began = time.perf_counter()
    partitions = {p: _PartitionTally() for p in ends}
    replay(
        settings,
        topic,
        ends,
        lambda message: partitions[message.partition()].add(message),
        progress.advance if progress else None,
    )
    if progress:
        progress.finish()
    return TopicMeasurement(
        topic,
        [partitions[p].result(p) for p in sorted(partitions)],
        description.configs,
        time.perf_counter() - began,
    )


class _PartitionTally:
    """Latest record kind per key, and running totals."""

    __slots__ = ("bytes", "first_ts", "last_ts", "latest", "records", "tombstones")

    def __init__(self) -> None:
        self.latest: dict[bytes | None, bool] = {}  # key -> latest record is a value
        self.records = self.tombstones = self.bytes = 0
        self.first_ts: int | None = None
        self.last_ts: int | None = None

    def add(self, message: Message) -> None:
        value = message.value()
        key = message.key()
        self.records += 1
        self.bytes += len(key or b"") + len(value or b"")
        if value is None:
            self.tombstones += 1
        self.latest[key] = value is not None
        _, timestamp = message.timestamp()
        if timestamp > 0:
            self.first_ts = timestamp if self.first_ts is None else min(self.first_ts, timestamp)
            self.last_ts = timestamp if self.last_ts is None else max(self.last_ts, timestamp)

    def result(self, partition: int) -> PartitionMeasurement:
        return PartitionMeasurement(
            partition,
            self.records,
            sum(self.latest.values()),
            self.tombstones,
            self.bytes,
            self.first_ts,
            self.last_ts,
        )
