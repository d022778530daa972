"""How long the join's outputs keep their records against how long ``board`` keeps the records
they came from.

The outputs (``board-detail``, ``board-unmatched``, ``board-dlq``) are reconciliation's evidence
of what became of each board. An output record that ages out while its source record is still in
``board`` leaves a correct pipeline with an outcome it can no longer show, and no repair can
write the evidence back; so ``topics create`` gives outputs at least ``board``'s retention, and
``topics create``, ``topics describe`` and the health page say when an output would expire first
(:func:`expiry_risks`, the one rule) or when no reconciliation has looked within the outputs'
retention (:func:`reconciliation_overdue`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from confluent_kafka.admin import AdminClient

from boardstream.durations import span
from boardstream.kafka.clients import cluster_metadata, topic_configs
from boardstream.settings import Settings

log = logging.getLogger(__name__)

UNLIMITED = -1  # Kafka's "no limit" for retention.ms and retention.bytes


class PipelineTopics(Protocol):
    """One pipeline's topics, as ``boardstream.joins.topics.JoinTopics`` names them (the joins
    use this package, so it is named here by its shape). Where none is given, the settings'
    topics: the shipped pipeline's."""

    @property
    def stream(self) -> str: ...
    @property
    def table(self) -> str: ...
    @property
    def tick(self) -> str: ...
    @property
    def joined(self) -> str: ...
    @property
    def unmatched(self) -> str: ...
    @property
    def dead_letters(self) -> str: ...


def source_and_outputs(
    settings: Settings, topics: PipelineTopics | None
) -> tuple[str, tuple[str, ...]]:
    """The stream topic whose records the outputs must outlive, and the outputs."""
    if topics is None:
        return settings.board_topic, settings.output_topics
    return topics.stream, (topics.joined, topics.unmatched, topics.dead_letters)


@dataclass(frozen=True)
class Retention:
    """What deletes a topic's records: its cleanup.policy, and the age (ms) and partition size
    (bytes) past which the delete policy removes them; None: no such limit. A compact-only topic
    deletes by neither."""

    policy: str
    ms: int | None
    bytes: int | None

    @classmethod
    def of(cls, configs: Mapping[str, str]) -> Retention:
        """From a topic's effective configs (set on it or the broker's defaults)."""
        policy = configs["cleanup.policy"]
        deletes = "delete" in policy.split(",")
        return cls(
            policy,
            _limit(configs["retention.ms"]) if deletes else None,
            _limit(configs["retention.bytes"]) if deletes else None,
        )


def _limit(value: str | int) -> int | None:
    number = int(value)
    return None if number == UNLIMITED else number


def _shorter(ms: int | None, than: int | None) -> bool:
    """Whether an age limit ``ms`` ends before ``than`` (None: forever)."""
    return ms is not None and (than is None or ms < than)


def _age(ms: int | None) -> str:
    return "-1 (forever)" if ms is None else f"{ms} ({span(ms / 1000)})"


def stream_retention(settings: Settings, source: Retention | None = None) -> dict[str, str]:
    """The retention configs ``topics create`` gives a delete-policy stream: retention.ms from
    BOARDSTREAM_TOPIC_RETENTION_MS, or ``source``'s (an existing ``board``'s) where that keeps
    records longer, and no size limit (a size limit deletes by volume, not age)."""
    setting = _limit(settings.topic_retention_ms)
    ms = source.ms if source is not None and _shorter(setting, source.ms) else setting
    return {
        "retention.ms": str(UNLIMITED if ms is None else ms),
        "retention.bytes": str(UNLIMITED),
    }


@dataclass(frozen=True)
class ExpiryRisk:
    """An output topic that may delete a record while ``board`` still holds its source."""

    output: str
    source: str
    reason: str

    def __str__(self) -> str:
        return f"{self.output} may expire before {self.source}: {self.reason}"

    def involves(self, topics: Collection[str]) -> bool:
        return self.output in topics or self.source in topics


def risks_of(output: Retention, source: Retention) -> list[str]:
    """The rule, stated once: an output may lose a record before ``board`` loses its source when
    - its cleanup.policy compacts: compaction drops a board's older output records while
      ``board`` still holds the sources they name;
    - it has a finite retention.bytes: deletion by size follows volume, not age, and an output
      record is larger than its source (it carries the member's profile), so no size limit,
      not even ``board``'s own, keeps outputs as long;
    - its retention.ms is shorter than ``board``'s (-1 is forever, longer than any).
    Equal retention.ms keeps an output record at least as long past its own (later) timestamp
    as its source is surely kept; Kafka deletes whole segments, so a source may still outlive
    it by up to its segment's span, which reconciliation reports as expired evidence.
    """
    reasons = []
    if "compact" in output.policy.split(","):
        reasons.append(
            f"cleanup.policy={output.policy} compacts away a board's older records, whose "
            "sources it still holds"
        )
    if output.bytes is not None:
        reasons.append(
            f"retention.bytes={output.bytes} deletes by size, not age (set -1: no size limit)"
        )
    if _shorter(output.ms, source.ms):
        reasons.append(f"retention.ms={_age(output.ms)} is shorter than its {_age(source.ms)}")
    return reasons


@dataclass(frozen=True)
class StreamRetention:
    """``board``'s retention and each existing output's, as the broker reports them now;
    ``source`` None: ``board`` does not exist (nothing to outlive yet)."""

    source_topic: str
    source: Retention | None
    outputs: dict[str, Retention]

    @property
    def risks(self) -> list[ExpiryRisk]:
        if self.source is None:
            return []
        return [
            ExpiryRisk(name, self.source_topic, reason)
            for name, output in self.outputs.items()
            for reason in risks_of(output, self.source)
        ]

    @property
    def shortest_ms(self) -> int | None:
        """The shortest age limit among the outputs: how long their evidence surely lasts
        (size limits aside, which :attr:`risks` reports); None: no output deletes by age."""
        limits = [output.ms for output in self.outputs.values() if output.ms is not None]
        return min(limits, default=None)


def read_retention(
    admin: AdminClient, settings: Settings, topics: PipelineTopics | None = None
) -> StreamRetention:
    """The stream topic's and the outputs' effective retention; topics that do not exist are
    left out."""
    source, outputs = source_and_outputs(settings, topics)
    existing = cluster_metadata(admin, settings).topics
    names = [name for name in (source, *outputs) if name in existing]
    found = {
        name: Retention.of({n: e.value for n, e in entries.items()})
        for name, entries in topic_configs(admin, settings, names).items()
    }
    return StreamRetention(
        source, found.pop(source, None), {name: found[name] for name in outputs if name in found}
    )


def expiry_risks(
    admin: AdminClient, settings: Settings, topics: PipelineTopics | None = None
) -> list[ExpiryRisk]:
    return read_retention(admin, settings, topics).risks


def output_retention_ms(admin: AdminClient, settings: Settings) -> int | None:
    return read_retention(admin, settings).shortest_ms


def warn_expiry(
    admin: AdminClient,
    settings: Settings,
    names: Collection[str],
    topics: PipelineTopics | None = None,
) -> list[ExpiryRisk]:
    """The expiry risks involving ``names`` (an output, or the stream topic: every output),
    each logged as a WARNING."""
    found = [risk for risk in expiry_risks(admin, settings, topics) if risk.involves(names)]
    for risk in found:
        log.warning("%s", risk)
    return found


def reconciliation_overdue(
    last_verdict_at: datetime | None, now: datetime, retention_ms: int | None
) -> str | None:
    """Why evidence may age out unseen, or None. ``last_verdict_at``: when the newest
    reconciliation that reached a verdict (PASSED or FAILED) began, since it saw the outputs as
    they were then; ``retention_ms``: the outputs' shortest (:attr:`StreamRetention.shortest_ms`,
    None: forever). An output record written just after that run lives at least the retention,
    so once that much time has passed without another verdict it may be gone before any run saw
    it. No verdict yet is not overdue: the first run finds what already aged out."""
    if last_verdict_at is None or retention_ms is None:
        return None
    waited = now - last_verdict_at
    if waited < timedelta(milliseconds=retention_ms):
        return None
    return (
        f"no reconciliation has reached a verdict for {span(waited.total_seconds())}, longer "
        f"than the outputs' retention ({span(retention_ms / 1000)}): output records written "
        f"since {last_verdict_at:%Y-%m-%d %H:%M:%S} may age out before a run sees them"
    )
