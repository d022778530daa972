"""Read bounded ranges of partitions with one consumer: what a state restore does (each
partition from its earliest offset to its current end), and what an incremental reconciliation
does with the few records since its last run.

Shared by compaction measurement, incremental reconciliation and the benchmarks' floors, so
every plain read of a topic reads it the same way: committed records only (compaction gaps and
transaction markers are simply not records); a start below a partition's earliest offset reads
from the earliest (the records before it are gone, as Spark's source reads them with
``failOnDataLoss`` off); nothing at or past a range's end is handed over.

Each poll takes what has arrived, and a fetch at a partition's end waits at the broker no
longer than Spark's Kafka source does (``settings.SOURCE_FETCH``): librdkafka's batch call waits
out its whole timeout for a batch it cannot fill, and its default fetch wait is half a second,
which made a read of a few thousand records cost a second instead of a tenth of one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition

from boardstream.errors import BoardstreamError
from boardstream.kafka.clients import client_config
from boardstream.settings import SOURCE_FETCH, Settings

# Per topic, per partition: [start, end) offsets; a start of OFFSET_BEGINNING is the earliest.
Ranges = Mapping[str, Mapping[int, tuple[int, int]]]
POLL_S = 0.01  # a poll returns after this when nothing has arrived


def replay(
    settings: Settings,
    topic: str,
    end_offsets: dict[int, int],
    handle: Callable[[Message], None],
    advanced: Callable[[int], None] | None = None,
) -> None:
    """Call ``handle`` for every record of ``topic`` below ``end_offsets`` (per partition),
    in offset order within each partition; ``advanced(n)`` after each fetched chunk."""
    ranges = {topic: {p: (OFFSET_BEGINNING, end) for p, end in end_offsets.items()}}
    read_ranges(settings, ranges, handle, advanced, group=f"boardstream-replay-{topic}")


def read_ranges(
    settings: Settings,
    ranges: Ranges,
    handle: Callable[[Message], None],
    advanced: Callable[[int], None] | None = None,
    group: str = "boardstream-read",
) -> None:
    """Call ``handle`` for every committed record in ``ranges``, in offset order within each
    partition; ``advanced(n)`` after each polled chunk of records. Raises on any consumer
    error, and when nothing arrives for three connect timeouts while ranges are still open."""
    bounds = {(topic, p): bound for topic, parts in ranges.items() for p, bound in parts.items()}
    waiting = {where: end for where, (start, end) in bounds.items() if end > max(start, 0)}
    if not waiting:
        return
    consumer = Consumer(
        client_config(
            settings,
            **{
                "group.id": group,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "fetch.max.bytes": 64 * 1024 * 1024,
                "fetch.wait.max.ms": int(SOURCE_FETCH["kafka.fetch.max.wait.ms"]),
            },
        )
    )
    try:
        consumer.assign([TopicPartition(t, p, bounds[t, p][0]) for t, p in waiting])
        idle_limit_s = settings.connect_timeout_s * 3
        idle_since = time.monotonic()
        while waiting:
            messages = consumer.consume(10_000, timeout=POLL_S)
            if messages:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > idle_limit_s:
                open_ranges = ", ".join(f"{t}[{p}]" for t, p in sorted(waiting))
                raise BoardstreamError(f"reading {open_ranges}: nothing read for {idle_limit_s:g}s")
            records = 0
            for message in messages:
                error = message.error()
                where = (message.topic(), message.partition())
                end = waiting.get(where)
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    raise BoardstreamError(f"reading {where[0]}[{where[1]}]: {error.str()}")
                if end is None:  # a partition already read to its end
                    continue
                if error is None and message.offset() < end:
                    handle(message)
                    records += 1
                # A record at the end's last offset or past it, or the partition's end (its
                # next offset) at or past the range's end: nothing more of it to read.
                last = message.offset() if error is None else message.offset() - 1
                if last >= end - 1:
                    del waiting[where]
            if advanced and records:
                advanced(records)
    finally:
        consumer.close()
