"""Reconciliation: prove that board-detail and board_detail hold exactly every source board.

The front door: :func:`run_once` and :func:`repair_run` (not named ``run`` and ``repair``: the
modules of those names would replace them as the package's attributes), called alike by the
jobs' command lines, the DAGs and the benches. Imported lazily, so reading the vocabulary does
not start Spark's imports.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from boardstream.reconcile.run import reconcile_once as run_once  # noqa: F401
    from boardstream.settings import Settings


def __getattr__(name: str) -> Any:
    """``run_once`` is :func:`boardstream.reconcile.run.reconcile_once` (one run, recorded from
    start to verdict), imported on first use."""
    if name == "run_once":
        from boardstream.reconcile.run import reconcile_once

        return reconcile_once
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
