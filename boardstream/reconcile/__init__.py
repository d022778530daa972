"""Reconciliation: prove that board-detail and board_detail hold exactly every source board.

The front door: :func:`run_once` and :func:`repair_run` (not named ``run`` and ``repair``: the
modules of those names would replace them as the package's attributes), called alike by the
jobs' command lines, the DAGs and the benches. Imported lazily, so reading the vocabulary does
not start Spark's imports.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from boardstream.reconcile.checks import ReconcileOptions
    from boardstream.reconcile.run import RunResult
    from boardstream.settings import Settings


def run_once(
    spark: SparkSession,
    settings: Settings,
    run_by: str,
    join_checkpoint: Path | None = None,
    sink_checkpoint: Path | None = None,
    options: ReconcileOptions | None = None,
) -> RunResult:
    """One run, recorded from start to verdict (the jobs' checkpoints unless given)."""
    from boardstream.reconcile.run import reconcile_once

    return reconcile_once(spark, settings, run_by, join_checkpoint, sink_checkpoint, options)


def repair_run(
    spark: SparkSession,
    settings: Settings,
    run_id: int,
    join_mode: str,
    join_checkpoint: Path | None = None,
) -> dict[str, int]:
    """Repair run ``run_id``'s findings with the join's code; how many ids each step touched."""
    from boardstream.joins.member_table import JoinOptions
    from boardstream.reconcile import repair as repairing
    from boardstream.reconcile.run import checkpoints

    return repairing.repair(
        spark,
        settings,
        run_id,
        join_checkpoint or checkpoints(settings)[0],
        JoinOptions(mode=join_mode),
    )
