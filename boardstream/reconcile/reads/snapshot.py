"""The snapshot a reconciliation run checks: committed offsets of every topic involved, and how
far the join and the sink had got, taken in an order that makes "in flight" exact.

The jobs' progress is read first, the topics' end offsets after: anything a job had committed
was already written to its output topic (Spark's Kafka sink flushes before the batch commits), so
every output of a processed record lies below the end offsets taken afterwards. How far a job may
have read beyond its committed batch is noted too (:func:`under_way_to`): only up to there may an
output exist that its committed progress does not account for, or one of a board the snapshot
still sees waiting.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from boardstream.errors import BoardstreamError
from boardstream.kafka.clients import require_topics
from boardstream.locations import child, shown
from boardstream.settings import Settings
from boardstream.spark.checkpoint_files import CheckpointFiles
from boardstream.spark.checkpoint_lease import last_holder
from boardstream.spark.triggers import real_time_interval_ms

logger = logging.getLogger(__name__)

Offsets = dict[str, dict[int, int]]  # topic -> partition -> offset


@dataclass(frozen=True)
class JobProgress:
    """The end offsets (exclusive) of the last batch a streaming query committed."""

    batch_id: int | None  # None: the query never committed a batch
    offsets: Offsets
    # When that batch began: its offset log entry's ``batchTimestampMs`` (checksum-checked),
    # the job's last progress, which a file's modification time (a touch, a copy) cannot fake.
    began_at_ms: int | None = None
    # How far the job may have read past its committed batch when the topics were listed (per
    # topic, exclusive; None: not at all): the batch under way may have written outputs of it.
    under_way_to: Offsets | None = None
    # The checkpoint interval when the job's last driver ran the real-time trigger (its lease
    # says; 0 if unreadable), else None: such a job commits once per interval, so its input
    # may wait that much longer before it counts as stalled.
    real_time_interval_ms: int | None = None

    def of(self, topic: str) -> dict[int, int]:
        return self.offsets.get(topic, {})

    def under_way_of(self, topic: str) -> dict[int, int] | None:
        return None if self.under_way_to is None else self.under_way_to.get(topic, {})


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

    def records(self) -> int:
        """The records its topics hold, from the earliest offsets to the latest."""
        return sum(
            end - self.earliest.get(topic, {}).get(partition, 0)
            for topic, ends in self.latest.items()
            for partition, end in ends.items()
        )

    def records_after(self, cursor: Offsets) -> int:
        """The records its topics hold past ``cursor`` (per topic and partition, exclusive):
        what an incremental run from that cursor reads as new."""
        return sum(
            end - max(cursor.get(topic, {}).get(p, 0), self.earliest.get(topic, {}).get(p, 0))
            for topic, ends in self.latest.items()
            for p, end in ends.items()
            if end > cursor.get(topic, {}).get(p, 0)
        )

    def to_json(self) -> dict:
        return json.loads(json.dumps(asdict(self), default=str))

    @classmethod
    def from_json(cls, raw: dict) -> Snapshot:
        """The snapshot a run stored (:meth:`to_json`), for re-checking it later."""

        def progress(data: dict) -> JobProgress:
            under_way = data.get("under_way_to")
            if "under_way_to" not in data and data.get("later_batch_started"):
                under_way = raw["latest"]  # stored before the bound was: any position listed
            return JobProgress(
                data["batch_id"],
                _offsets(data["offsets"]),
                data.get("began_at_ms"),
                None if under_way is None else _offsets(under_way),
                data.get("real_time_interval_ms"),
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


def committed_progress(files: CheckpointFiles, checkpoint: str) -> JobProgress:
    """Read a Structured Streaming checkpoint (a URI): the highest batch in ``commits/``, and the
    source offsets and start time that ``offsets/<batch>`` recorded for it (:func:`_logged`)."""
    batches = _batches(files, child(checkpoint, "commits"))
    if not batches:
        return JobProgress(None, {})
    offsets, began_at_ms = _logged(files, checkpoint, batches[-1])
    return JobProgress(batches[-1], offsets, began_at_ms)


def as_listed(
    files: CheckpointFiles,
    settings: Settings,
    checkpoint: str,
    progress: JobProgress,
    latest: Offsets,
) -> JobProgress:
    """``progress`` with what the job may have done past it, asked after the topics' end
    offsets ``latest`` were listed: whether its last driver ran the real-time trigger, with
    which interval, and how far its batch under way may have read (:func:`under_way_to`)."""
    last = last_holder(settings, checkpoint)
    interval = None if last is None else real_time_interval_ms(last.details)
    progress = replace(progress, real_time_interval_ms=interval)
    under_way = under_way_to(files, checkpoint, progress, latest)
    return replace(progress, under_way_to=under_way)


def under_way_to(
    files: CheckpointFiles, checkpoint: str, progress: JobProgress, latest: Offsets
) -> Offsets | None:
    """How far the query may have read past ``progress`` (its outputs of that may exist,
    committed or not), given the topics' end offsets ``latest`` listed before this is asked:

    - under Spark's real-time trigger (``progress.real_time_interval_ms`` set), up to
      ``latest``: a real-time batch reads what arrives and writes its outputs at once, but logs
      its offsets only when it ends, and a stopped job leaves its cancelled batch's outputs
      behind;
    - otherwise up to the end offsets of the last batch logged, if any is (a batch's offsets
      are logged before it runs). Spark plans a batch only after committing the one before, so
      each entry past ``progress`` but the last must have its commit: a fast job commits and
      plans batches between the reading of ``progress`` and this (a sink did, two in a
      time-compressed life). The last entry is checked like the committed one, and an entry
      without the commit before it is refused: a forged entry would let outputs nothing
      accounts for pass as in flight.
    """
    if progress.real_time_interval_ms is not None:
        return latest
    after = -1 if progress.batch_id is None else progress.batch_id
    later = [batch for batch in _batches(files, child(checkpoint, "offsets")) if batch > after]
    if not later:
        return None
    committed = set(_batches(files, child(checkpoint, "commits")))
    if later != list(range(after + 1, later[-1] + 1)) or not committed >= set(later[:-1]):
        raise BoardstreamError(
            f"the offset log of {shown(checkpoint)} holds batch(es) "
            f"{', '.join(map(str, later))} after its last committed batch {after}: Spark logs a "
            "batch only after committing the one before, so the query did not write them. "
            "Restore the checkpoint, or start the job from a new one (which reprocesses its "
            "sources from the beginning)."
        )
    return _logged(files, checkpoint, later[-1])[0]


def _batches(files: CheckpointFiles, log: str) -> list[int]:
    """The batch ids of an offset or commit log, in order."""
    return sorted(int(name) for name in files.list_names(log) if name.isdigit())


def _logged(files: CheckpointFiles, checkpoint: str, batch: int) -> tuple[Offsets, int | None]:
    """A batch's offset log entry, checked against the checksum Spark wrote beside it (on a
    local disk): its sources' end offsets (one JSON line per source) and its
    ``batchTimestampMs``."""
    entry = child(child(checkpoint, "offsets"), str(batch))
    lines = files.read_text(entry).splitlines()
    offsets: Offsets = {}
    for line in lines[2:]:  # "v1", the batch metadata, then one line per source
        offsets.update(_offsets(json.loads(line)))
    return offsets, json.loads(lines[1]).get("batchTimestampMs")


def take_snapshot(
    files: CheckpointFiles,
    admin: AdminClient,
    settings: Settings,
    topics: list[str],
    join_checkpoint: str,
    sink_checkpoint: str,
) -> Snapshot:
    """What ``topics`` hold and how far the jobs of ``join_checkpoint`` and ``sink_checkpoint``
    (URIs) got, read so that every output counted is accounted for."""
    join = committed_progress(files, join_checkpoint)
    sink = committed_progress(files, sink_checkpoint)
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
        join=as_listed(files, settings, join_checkpoint, join, latest),
        sink=as_listed(files, settings, sink_checkpoint, sink, latest),
    )


def retained(admin: AdminClient, settings: Settings, snapshot: Snapshot) -> Snapshot:
    """``snapshot`` whose start offsets are listed again, after the run read its records.

    Retention (or ``deleteRecords``) may delete records between the snapshot and the read, and
    the readers then skip them, as compaction's gaps require; a full run over a day's topics
    met it, and the positions it skipped came out as ``extra`` outputs. Every record at or
    above a start listed afterwards was there throughout the read; those below are left out
    whether or not this read got them (:func:`readers.at_or_after`), so the run checks what it
    would have, had it started just after the deletion. Never past the snapshot's end."""
    partitions = [TopicPartition(t, p) for t, parts in snapshot.latest.items() for p in parts]
    now = _list(admin, settings, partitions, OffsetSpec.earliest())
    earliest = {
        topic: {
            p: min(max(snapshot.earliest.get(topic, {}).get(p, 0), now[topic][p]), end)
            for p, end in ends.items()
        }
        for topic, ends in snapshot.latest.items()
    }
    moved = [
        f"{topic}[{p}] {snapshot.earliest.get(topic, {}).get(p, 0)}->{start}"
        for topic, starts in earliest.items()
        for p, start in sorted(starts.items())
        if start > snapshot.earliest.get(topic, {}).get(p, 0)
    ]
    if moved:
        logger.info("records deleted while this run read them, left out: %s", ", ".join(moved))
    return replace(snapshot, earliest=earliest)


def ends_now(
    admin: AdminClient, settings: Settings, topic: str, snapshot: Snapshot
) -> dict[int, int]:
    """``topic``'s end offsets (read_committed) listed now, for the partitions ``snapshot`` has."""
    partitions = [TopicPartition(topic, p) for p in snapshot.latest[topic]]
    return _list(admin, settings, partitions, OffsetSpec.latest()).get(topic, {})


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
