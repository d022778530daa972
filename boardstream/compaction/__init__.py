"""Changelog compaction tuning: measure compacted topics, recommend cleaner settings, apply them
with a log that can be rolled back, and verify the effect on the replay a restore reads.

The front door (the CLI, the DAG and the bench call these, so they cannot drift apart):
:func:`selection`, :func:`tune`, :func:`verify` and :func:`rollback`.
"""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka.admin import AdminClient

from boardstream import database
from boardstream.compaction import apply, tuning, tuning_log
from boardstream.compaction.measure import TopicMeasurement
from boardstream.compaction.policy import Targets
from boardstream.compaction.tuning import Selection, TopicTuning
from boardstream.settings import Settings


def selection(
    settings: Settings,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    reconciled: Sequence[str] = (),
) -> Selection:
    """Topic patterns to touch and to spare; reconciliation's topics unless others are named."""
    return Selection(
        tuple(include), tuple(exclude), tuple(reconciled) or tuning.default_reconciled(settings)
    )


def tune(
    admin: AdminClient,
    settings: Settings,
    chosen: Selection,
    targets: Targets,
    execute: bool,
    run_by: str,
) -> list[TopicTuning]:
    """Measure and recommend; with ``execute``, apply and log in compaction_tuning_log."""
    engine = database.engine(settings.database) if execute else None
    return tuning.tune(admin, settings, engine, chosen, targets, execute, run_by)


def verify(
    admin: AdminClient, settings: Settings, change_id: int | None, show_progress: bool = True
) -> dict[int, TopicMeasurement]:
    """Re-measure after change ``change_id`` (None: every change not verified yet), logged."""
    engine = database.engine(settings.database)
    changes = tuning_log.unverified(engine) if change_id is None else [change_id]
    return {
        change: apply.verify(admin, settings, engine, change, show_progress) for change in changes
    }


def rollback(admin: AdminClient, settings: Settings, change_id: int, run_by: str) -> int:
    """Undo change ``change_id``; the rollback is logged as a change of its own (returned)."""
    return apply.rollback(admin, settings, database.engine(settings.database), change_id, run_by)
