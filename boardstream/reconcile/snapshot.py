"""The snapshot a reconciliation run checks: committed offsets of every topic involved, and how
far the join and the sink had got, taken in an order that makes "in flight" exact.

The jobs' progress is read first, the topics' end offsets after: anything a job had committed
was already written to its output topic (Spark's Kafka sink flushes before the batch commits), so
every output of a processed record lies below the end offsets taken afterwards. Whether a later
batch had begun by then (its offsets are logged before it writes) is noted too: only then may an
output of a board the snapshot still sees waiting already exist.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from boardstream.errors import BoardstreamError
from boardstream.kafka.clients import require_topics
from boardstream.settings import Settings
from boardstream.spark.checkpoint_checksums import read_verified

Offsets = dict[str, dict[int, int]]  # topic -> partition -> offset


@dataclass(frozen=True)
class JobProgress:
    """The end offsets (exclusive) of the last batch a streaming query committed."""

    batch_id: int | None  # None: the query never committed a batch
    offsets: Offsets
    # When that batch began: its offset log entry's ``batchTimestampMs`` (checksum-checked),
    # the job's last progress, which a file's modification time (a touch, a copy) cannot fake.
    began_at_ms: int | None = None
    later_batch_started: bool = False  # a later batch was planned when the topics were listed

    def of(self, topic: str) -> dict[int, int]:
        return self.offsets.get(topic, {})


@dataclass(frozen=True)
class EarlierSnapshot:
    """What an earlier run's snapshot saw, and when: every record below its end offsets
    existed by then, whatever the record's own timestamp (its producer's clock) says."""

    taken_at_ms: int
    latest: Offsets

    def held(self, topic: str, partition: int, offset: int) -> bool:
        return offset < self.latest.get(topic, {}).get(partition, 0)

    @classmethod
    def of(cls, raw: dict) -> EarlierSnapshot:
        """From a run's stored snapshot (:meth:`Snapshot.to_json`)."""
        taken_at = datetime.fromisoformat(raw["taken_at"])
        return cls(int(taken_at.timestamp() * 1000), _offsets(raw["latest"]))


@dataclass(frozen=True)
class Snapshot:
    taken_at: datetime
    earliest: Offsets
    latest: Offsets  # read_committed: the last stable offset
    join: JobProgress
    sink: JobProgress
    # The newest earlier run's, taken at least the stall age before this one (liveness).
    earlier: EarlierSnapshot | None = None

    def to_json(self) -> dict:
        return json.loads(json.dumps(asdict(self), default=str))

    @classmethod
    def from_json(cls, raw: dict) -> Snapshot:
        """The snapshot a run stored (:meth:`to_json`), for re-checking it later."""

        def progress(data: dict) -> JobProgress:
            return JobProgress(
                data["batch_id"],
                _offsets(data["offsets"]),
                data.get("began_at_ms"),
                data.get("later_batch_started", False),
            )

        earlier = raw.get("earlier")
        return cls(
            datetime.fromisoformat(raw["taken_at"]),
            _offsets(raw["earliest"]),
            _offsets(raw["latest"]),
            progress(raw["join"]),
            progress(raw["sink"]),
            earlier and EarlierSnapshot(earlier["taken_at_ms"], _offsets(earlier["latest"])),
        )


def _offsets(data: dict) -> Offsets:
    """Offsets as JSON stores them (partitions as text) back to integers."""
    return {t: {int(p): int(o) for p, o in parts.items()} for t, parts in data.items()}


def committed_progress(checkpoint: Path) -> JobProgress:
    """Read a Structured Streaming checkpoint: the highest batch in ``commits/``, and the source
    offsets (one JSON line per source) and start time (the batch metadata's line) that
    ``offsets/<batch>`` recorded for it, checked against the checksum Spark wrote beside it."""
    commits = checkpoint / "commits"
    batches = sorted(int(p.name) for p in commits.glob("[0-9]*")) if commits.is_dir() else []
    if not batches:
        return JobProgress(None, {})
    batch = batches[-1]
    lines = read_verified(checkpoint / "offsets" / str(batch)).decode().splitlines()
    offsets: Offsets = {}
    for line in lines[2:]:  # "v1", the batch metadata, then one line per source
        offsets.update(_offsets(json.loads(line)))
    return JobProgress(batch, offsets, json.loads(lines[1]).get("batchTimestampMs"))


def later_batch_started(checkpoint: Path, progress: JobProgress) -> bool:
    """Whether the query has logged the offsets of a batch after ``progress``'s (it may have
    written outputs of it, committed or not)."""
    after = -1 if progress.batch_id is None else progress.batch_id
    offsets = checkpoint / "offsets"
    return offsets.is_dir() and any(int(p.name) > after for p in offsets.glob("[0-9]*"))


def take_snapshot(
    admin: AdminClient, settings: Settings, join_checkpoint: Path, sink_checkpoint: Path
) -> Snapshot:
    join = committed_progress(join_checkpoint)
    sink = committed_progress(sink_checkpoint)
    topics = [
        settings.member_topic,
        settings.board_topic,
        settings.board_detail_topic,
        settings.unmatched_topic,
        settings.dlq_topic,
    ]
    metadata = require_topics(admin, settings, topics)
    partitions = [
        TopicPartition(topic, p) for topic in topics for p in metadata.topics[topic].partitions
    ]
    earliest = _list(admin, settings, partitions, OffsetSpec.earliest())
    latest = _list(admin, settings, partitions, OffsetSpec.latest())
    return Snapshot(
        datetime.now(UTC),
        earliest=earliest,
        latest=latest,
        join=replace(join, later_batch_started=later_batch_started(join_checkpoint, join)),
        sink=replace(sink, later_batch_started=later_batch_started(sink_checkpoint, sink)),
    )


def _list(
    admin: AdminClient, settings: Settings, partitions: list[TopicPartition], spec: OffsetSpec
) -> Offsets:
    futures = admin.list_offsets(
        dict.fromkeys(partitions, spec),
        isolation_level=IsolationLevel.READ_COMMITTED,
        request_timeout=settings.connect_timeout_s,
    )
    offsets: Offsets = {}
    for tp, future in futures.items():
        try:
            offsets.setdefault(tp.topic, {})[tp.partition] = future.result().offset
        except KafkaException as error:
            raise BoardstreamError(f"listing offsets of {tp.topic}: {error}") from None
    return offsets
