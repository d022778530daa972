"""One tuning pass over the selected compacted topics: measure, recommend, plan, apply.

What the CLI and the Airflow DAG both run, so the two cannot drift apart.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace

from confluent_kafka.admin import AdminClient
from sqlalchemy.engine import Engine

from boardstream.compaction.apply import PlannedSetting, apply, plan
from boardstream.compaction.measure import TopicMeasurement, compacted_topics, measure_topic
from boardstream.compaction.policy import Guardrails, Targets, recommend
from boardstream.errors import BoardstreamError
from boardstream.settings import Settings


@dataclass(frozen=True)
class TopicTuning:
    measurement: TopicMeasurement
    planned: list[PlannedSetting]
    change_id: int | None  # None: dry run, or nothing to change


@dataclass(frozen=True)
class Selection:
    """Which topics a pass may touch: compacted ones matching ``include`` (all when empty) and
    no ``exclude`` pattern; ``reconciled`` patterns name the topics reconciliation reads."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    reconciled: tuple[str, ...] = ()

    def is_reconciled(self, topic: str) -> bool:
        return any(fnmatch.fnmatchcase(topic, pattern) for pattern in self.reconciled)


def default_reconciled(settings: Settings) -> tuple[str, ...]:
    """Reconciliation reads the board topic and checks member ids against the member topic."""
    return (settings.member_topic, settings.board_topic)


def select(admin: AdminClient, settings: Settings, selection: Selection) -> list[str]:
    """The compacted topics ``selection`` matches; none is an error, not a silent no-op."""
    topics = compacted_topics(admin, settings, list(selection.include), list(selection.exclude))
    if not topics:
        raise BoardstreamError(
            "no compacted topic matches "
            + (", ".join(selection.include) if selection.include else "any pattern")
            + (f" (excluding {', '.join(selection.exclude)})" if selection.exclude else "")
        )
    return topics


def tune(
    admin: AdminClient,
    settings: Settings,
    engine: Engine | None,
    selection: Selection,
    targets: Targets,
    execute: bool,
    run_by: str,
    guardrails: Guardrails | None = None,
    show_progress: bool = True,
) -> list[TopicTuning]:
    """Measure and plan every selected topic; with ``execute``, apply and log the plan."""
    if execute and engine is None:
        raise BoardstreamError("applying changes needs the database for compaction_tuning_log")
    tunings = []
    for topic in select(admin, settings, selection):
        measurement = measure_topic(admin, settings, topic, show_progress)
        topic_targets = replace(targets, reconciled=selection.is_reconciled(topic))
        planned = plan(measurement, recommend(measurement.shape(), topic_targets, guardrails))
        change_id = (
            apply(admin, settings, engine, measurement, planned, run_by)
            if execute and engine is not None
            else None
        )
        tunings.append(TopicTuning(measurement, planned, change_id))
    return tunings


def measurement_line(m: TopicMeasurement) -> str:
    tombstones = sum(p.tombstones for p in m.partitions)
    return (
        f"{m.topic}: {m.records:,} records replayed, {m.live_keys:,} live keys,"
        f" {tombstones:,} tombstones, waste {m.waste:.1%} ({m.seconds:.1f}s)"
    )


def report(tunings: list[TopicTuning], execute: bool) -> list[str]:
    """Readable lines for a terminal or a task log."""
    lines = []
    for tuning in tunings:
        lines.append(measurement_line(tuning.measurement))
        lines.extend(f"  {p.line()}" for p in tuning.planned)
        if tuning.change_id is not None:
            lines.append(f"  applied as change {tuning.change_id}")
        elif not execute:
            lines.append("  dry run: nothing applied")
        else:
            lines.append("  nothing to change")
    return lines
