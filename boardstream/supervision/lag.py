"""How far a live stream is behind its input: its source topics' end offsets against the offsets
its checkpoint last committed.

A progress line's ``max_offsets_behind_latest`` is what the query saw when its last batch ran:
a stream that runs no batch (starved of cores, stuck) keeps reporting the lag of its last one,
0 while thousands of records wait. The broker's end offsets, listed now, against the checkpoint's
newest commit (:func:`~boardstream.reconcile.reads.snapshot.committed_progress`, the offsets a
restarted query would resume from) count what waits, whether or not the query reports. Under the
real-time trigger the commit trails by up to one checkpoint interval of input.
"""

from __future__ import annotations

import logging
from pathlib import Path

from confluent_kafka.admin import OffsetSpec

from boardstream.errors import BoardstreamError
from boardstream.kafka.clients import admin_client, require_topics
from boardstream.kafka.topics import list_offsets
from boardstream.reconcile.reads.snapshot import Offsets, committed_progress
from boardstream.settings import Settings

logger = logging.getLogger(__name__)


def offsets_behind(committed: Offsets, starts: Offsets, ends: Offsets) -> int:
    """Records between each partition's committed offset and its end, summed. A partition the
    query never committed counts from its start (the streams read from the earliest offset);
    one whose start passed the commit (retention deleted what waited) from its start."""
    return sum(
        max(0, end - max(committed.get(topic, {}).get(partition, 0), starts[topic][partition]))
        for topic, partitions in ends.items()
        for partition, end in partitions.items()
    )


def source_lag(settings: Settings, checkpoint: Path, sources: tuple[str, ...]) -> int | None:
    """The stream's lag now, or None when the broker cannot say (the batch-age bound still
    judges the stream then)."""
    admin = admin_client(settings)
    try:
        committed = committed_progress(checkpoint).offsets
        metadata = require_topics(admin, settings, list(sources))
        starts: Offsets = {}
        ends: Offsets = {}
        for topic in sources:
            partitions = sorted(metadata.topics[topic].partitions)
            starts[topic] = list_offsets(admin, settings, topic, partitions, OffsetSpec.earliest())
            ends[topic] = list_offsets(admin, settings, topic, partitions, OffsetSpec.latest())
    except BoardstreamError as error:
        logger.warning("the lag of %s is unknown: %s", checkpoint.name, error)
        return None
    return offsets_behind(committed, starts, ends)
