"""Is the pipeline moving? A job that stopped reading while input waits hides loss from every
position check (its boards are simply "not yet read"), so a stall is a finding of its own.

Input waits since its first unread record was written, or since the job's last committed
batch began, whichever is later; waiting longer than ``stall_after_ms`` is ``stalled``, with the
job and the record it waits at (the one a failing batch most likely chokes on). A job under the
real-time trigger commits once per checkpoint interval, so what it reads waits up to one
interval more: its stall age grows by its interval, at most doubled (the interval is its lease's
word: a forged one cannot hide a stall for longer). When a record was written is its
timestamp, its producer's word, but never later than an earlier run that saw it
(:class:`~boardstream.reconcile.reads.snapshot.EarlierSnapshot`): a record stamped in the future
cannot hide a stall. A board waiting in the join's state past its unmatched timeout plus the
same slack means timers that do not fire (``overdue_pending``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition

from boardstream.kafka.clients import client_config
from boardstream.reconcile.reads.snapshot import EarlierSnapshot, JobProgress
from boardstream.settings import Settings
from boardstream.spark.triggers import real_time_allowance_ms


@dataclass(frozen=True)
class Waiting:
    """The first record of a partition that a job has not read."""

    topic: str
    partition: int
    offset: int
    key: str | None
    size: int
    timestamp_ms: int


def first_unread(
    settings: Settings, topic: str, read_to: dict[int, int], latest: dict[int, int]
) -> list[Waiting]:
    """Per partition of ``topic`` with records in [``read_to``, ``latest``), the first."""
    behind = {p: read_to.get(p, 0) for p, end in latest.items() if end > read_to.get(p, 0)}
    if not behind:
        return []
    consumer = Consumer(
        client_config(
            settings,
            **{
                "group.id": f"boardstream-liveness-{topic}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            },
        )
    )
    found: dict[int, Waiting] = {}
    try:
        consumer.assign([TopicPartition(topic, p, offset) for p, offset in behind.items()])
        deadline = time.monotonic() + settings.connect_timeout_s * 3
        while len(found) < len(behind) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None or message.error() is not None:
                continue
            if message.partition() in found or message.offset() >= latest[message.partition()]:
                continue
            key = message.key()
            found[message.partition()] = Waiting(
                topic,
                message.partition(),
                message.offset(),
                None if key is None else key.decode("utf-8", "backslashreplace"),
                len(message.value() or b""),
                message.timestamp()[1],
            )
    finally:
        consumer.close()
    return [found[p] for p in sorted(found)]


def stalled(
    job: str,
    progress: JobProgress,
    waiting: list[Waiting],
    now_ms: int,
    stall_after_ms: int,
    earlier: EarlierSnapshot | None = None,
) -> list[str]:
    """One line per partition where ``job`` has left input waiting too long."""
    lines = []
    for record in waiting:
        written = record.timestamp_ms
        if earlier is not None and earlier.held(record.topic, record.partition, record.offset):
            written = min(written, earlier.taken_at_ms)
        since = max(progress.began_at_ms or 0, written)
        slack = real_time_allowance_ms(progress.real_time_interval_ms, stall_after_ms)
        if now_ms - since > stall_after_ms + slack:
            lines.append(
                f"{job} waits at {record.topic}[{record.partition}]@{record.offset} "
                f"(key {record.key}, {record.size:,} bytes) for {(now_ms - since) / 1000:,.0f}s"
            )
    return lines


def overdue_cutoff_ms(
    now_ms: int, unmatched_timeout_ms: int, stall_after_ms: int, join_began_ms: int | None = None
) -> int:
    """A board that arrived before this should have left the join's state as unmatched: its
    timeout ran out a stall age ago, and before the join's last committed batch began
    (``join_began_ms``), which fired every timer due by then. A board whose timeout ran out
    after that batch waits for the join's next one (a stack restarted after a while down, the
    join not yet run since): not overdue, and a join that does not run again leaves its input
    waiting, which is ``stalled``."""
    cutoff = now_ms - unmatched_timeout_ms - stall_after_ms
    if join_began_ms is None:
        return cutoff
    return min(cutoff, join_began_ms - unmatched_timeout_ms)


def catching_up(
    join: JobProgress, now_ms: int, stall_after_ms: int, counts: dict[str, int]
) -> str | None:
    """Why a run finds boards on their way while the join has not run for longer than a stall
    age (a stack restarted after a while down, the join's first batch since not yet committed),
    in one line; None when it has run since, or nothing waits for it."""
    waiting = counts.get("not_yet_read", 0), counts.get("pending", 0)
    if join.began_at_ms is None or now_ms - join.began_at_ms <= stall_after_ms or not any(waiting):
        return None
    idle = (now_ms - join.began_at_ms) // 1000
    return (
        f"the join's last batch began {idle // 3600}h {idle % 3600 // 60}m ago: its next batch "
        f"reads the {waiting[0]:,} boards not yet read and sends each of the {waiting[1]:,} "
        "pending whose timeout ran out since then to board-unmatched (not yet overdue)"
    )
