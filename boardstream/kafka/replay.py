"""Read partitions from their earliest offset to their current end: what a state restore does.

Shared by compaction measurement and the restore benchmark, so both read a topic the same way
(committed records only; compaction gaps and transaction markers are simply not records).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition

from boardstream.errors import BoardstreamError
from boardstream.kafka.clients import client_config
from boardstream.settings import Settings


def replay(
    settings: Settings,
    topic: str,
    end_offsets: dict[int, int],
    handle: Callable[[Message], None],
    advanced: Callable[[int], None] | None = None,
) -> None:
    """Call ``handle`` for every record of ``topic`` below ``end_offsets`` (per partition),
    in offset order within each partition; ``advanced(n)`` after each fetched chunk."""
    consumer = Consumer(
        client_config(
            settings,
            **{
                "group.id": f"boardstream-replay-{topic}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
                "fetch.max.bytes": 64 * 1024 * 1024,
            },
        )
    )
    waiting = {p for p, end in end_offsets.items() if end > 0}
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in waiting])
        idle_limit_s = settings.connect_timeout_s * 3
        idle_since = time.monotonic()
        while waiting:
            messages = consumer.consume(10_000, timeout=1.0)
            if messages:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > idle_limit_s:
                raise BoardstreamError(f"replaying {topic}: nothing read for {idle_limit_s:g}s")
            records = 0
            for message in messages:
                error = message.error()
                if error is None:
                    handle(message)
                    records += 1
                elif error.code() == KafkaError._PARTITION_EOF:
                    if message.offset() >= end_offsets[message.partition()]:
                        waiting.discard(message.partition())
                else:
                    raise BoardstreamError(f"replaying {topic}: {error.str()}")
            if advanced:
                advanced(records)
    finally:
        consumer.close()
