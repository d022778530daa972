"""How far a live stream is behind its input: its source topics' end offsets now, against the
offsets its newest batch ended at.

A progress line's ``max_offsets_behind_latest`` is what the query saw when its last batch ran:
a stream that runs no batch (starved of cores, stuck) keeps reporting the lag of its last one,
0 while thousands of records wait. The broker's end offsets, listed now, against the end offsets
of the newest batch the stream reported (:func:`committed_offsets`: Spark reports a batch once
it is committed, so these are the offsets a restarted query resumes from) count what waits,
whether or not the query reports. They come from the progress store, which every host reads,
not from the checkpoint. Under the real-time trigger a batch is a checkpoint interval, so the
figure trails by up to one interval of input.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from confluent_kafka.admin import OffsetSpec

from boardstream.errors import BoardstreamError
from boardstream.kafka.clients import admin_client, require_topics
from boardstream.kafka.topics import list_offsets
from boardstream.reconcile.reads.snapshot import Offsets
from boardstream.settings import Settings

logger = logging.getLogger(__name__)


def committed_offsets(newest: list[dict[str, Any]]) -> Offsets:
    """The end offsets of each source of the newest progress line in ``newest`` (a progress
    summary's ``sources``: Kafka's offsets as JSON, given as text or parsed); {} for none."""
    offsets: Offsets = {}
    for source in newest[-1]["sources"] if newest else []:
        end = source.get("endOffset")
        for topic, partitions in (json.loads(end) if isinstance(end, str) else end or {}).items():
            offsets.setdefault(topic, {}).update({int(p): int(o) for p, o in partitions.items()})
    return offsets


def offsets_behind(committed: Offsets, starts: Offsets, ends: Offsets) -> int:
    """Records between each partition's committed offset and its end, summed. A partition the
    query never committed counts from its start (the streams read from the earliest offset);
    one whose start passed the commit (retention deleted what waited) from its start."""
    return sum(
        max(0, end - max(committed.get(topic, {}).get(partition, 0), starts[topic][partition]))
        for topic, partitions in ends.items()
        for partition, end in partitions.items()
    )


def source_lag(
    settings: Settings, job: str, committed: Offsets, sources: tuple[str, ...]
) -> int | None:
    """The stream's lag now, or None when the broker cannot say (the batch-age bound still
    judges the stream then)."""
    admin = admin_client(settings)
    try:
        metadata = require_topics(admin, settings, list(sources))
        starts: Offsets = {}
        ends: Offsets = {}
        for topic in sources:
            partitions = sorted(metadata.topics[topic].partitions)
            starts[topic] = list_offsets(admin, settings, topic, partitions, OffsetSpec.earliest())
            ends[topic] = list_offsets(admin, settings, topic, partitions, OffsetSpec.latest())
    except BoardstreamError as error:
        logger.warning("the lag of %s is unknown: %s", job, error)
        return None
    return offsets_behind(committed, starts, ends)
