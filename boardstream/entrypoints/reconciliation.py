"""The reconcile and repair jobs' command lines (``jobs/reconcile.py``, ``jobs/repair.py``).

The runs' modules are imported once the flags are parsed and the services answered: Great
Expectations alone takes seconds to import, which every refusal (a bad flag, a broker that does
not answer) waited for before."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from boardstream import database, reconcile
from boardstream.entrypoints.argtypes import duration_ms, positive
from boardstream.entrypoints.pipeline_option import add_pipeline_argument, deployed
from boardstream.errors import BoardstreamError, ServiceUnreachableError
from boardstream.joins.member_table import AS_OF, LATEST
from boardstream.logs import configure, verbose_requested
from boardstream.pipelines import Join, Reconcile
from boardstream.preflight import require
from boardstream.settings import Settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from boardstream.joins.topics import Deployed
    from boardstream.reconcile.checks.spark_checks import ReconcileOptions
    from boardstream.reconcile.target import ReconcileTarget


def reconcile_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reconcile", description=(reconcile.__doc__ or "").splitlines()[0]
    )
    add_pipeline_argument(parser)
    parser.add_argument("--join-checkpoint")
    parser.add_argument("--sink-checkpoint")
    parser.add_argument("--run-by", default="cli")
    parser.add_argument(
        "--full",
        action="store_true",
        help="read every topic and the whole table again, and rebuild the digest ledger "
        "(default: an incremental run, reading what arrived since the last run and the rows "
        "that changed; a full one while no full run has filled the ledger)",
    )
    parser.add_argument(
        "--stall-after",
        type=duration_ms,
        default=Reconcile().stall_after,
        help="input waiting longer than this means a stalled job (default: twice the schedule)",
    )
    parser.add_argument(
        "--unmatched-timeout",
        type=duration_ms,
        default=Join().grace,
        help="the join's unmatched timeout (boards waiting longer are overdue)",
    )
    return parser


def reconcile_main(argv: Sequence[str] | None = None) -> int:
    """``jobs/reconcile.py``: exit 0 when the run passes, 1 when it finds anything it cannot
    prove (the summary says what), 2 when it could not finish (recorded as ERRORED)."""
    parser = reconcile_parser()
    args = parser.parse_args(argv)
    chosen = deployed(parser, args.pipeline)
    configure(verbose_requested())
    settings = Settings()
    if not _reachable(settings, "reconcile"):
        return 2
    from boardstream.reconcile.checks.spark_checks import ReconcileOptions
    from boardstream.spark.session import spark_session

    target = _target(settings, chosen)
    options = ReconcileOptions(args.stall_after, args.unmatched_timeout)
    spark = spark_session(settings, "reconcile", short_lived=not args.full)
    spark.sparkContext.setLogLevel("WARN")
    return _run(
        spark,
        settings,
        args.run_by,
        args.join_checkpoint,
        args.sink_checkpoint,
        options,
        reconcile.FULL if args.full else reconcile.INCREMENTAL,
        target,
    )


def _target(settings: Settings, chosen: Deployed | None) -> ReconcileTarget:
    """What ``--pipeline`` chose, to reconcile or repair: the shipped pipeline on the settings'
    topics (None), else a declared one on its own."""
    from boardstream.reconcile.target import ReconcileTarget

    return ReconcileTarget.shipped(settings) if chosen is None else ReconcileTarget.of(chosen)


def _reachable(settings: Settings, job: str) -> bool:
    """Whether the broker and the database answer; if not, one line says which (exit 2)."""
    try:
        require(settings, job)
    except ServiceUnreachableError as error:
        print(str(error), file=sys.stderr, flush=True)
        return False
    return True


def _run(
    spark: SparkSession,
    settings: Settings,
    run_by: str,
    join_checkpoint: str | None,
    sink_checkpoint: str | None,
    options: ReconcileOptions | None,
    kind: str,
    target: ReconcileTarget | None = None,
) -> int:
    """One run, its summary printed; the exit code is its verdict (2: it could not finish, or
    not record itself: one line, no traceback)."""
    from boardstream.reconcile.run import ReconciliationError

    try:
        result = reconcile.run_once(
            spark, settings, run_by, join_checkpoint, sink_checkpoint, options, kind, target
        )
    except ReconciliationError as error:
        print(str(error), file=sys.stderr, flush=True)
        return 2
    except BoardstreamError as error:  # not recorded, or not all of it: no topics, no database
        print(f"reconcile: error: {error}", file=sys.stderr, flush=True)
        return 2
    print("\n".join(result.summary()), flush=True)
    return 0 if result.passed else 1


def repair_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="repair",
        description="Repair what a reconciliation run found, with the stream's own code, then "
        "reconcile again.",
    )
    parser.add_argument("--run", type=positive, required=True, help="reconciliation run id")
    add_pipeline_argument(parser)
    parser.add_argument("--join-checkpoint")
    parser.add_argument("--sink-checkpoint")
    parser.add_argument(
        "--join-mode", choices=[LATEST, AS_OF], help="default: the pipeline's declared mode"
    )
    parser.add_argument("--run-by", default="cli")
    return parser


def repair_main(argv: Sequence[str] | None = None) -> int:
    """``jobs/repair.py``: repair run RUN_ID's findings, then reconcile again; exit 0 when the
    new run passes."""
    parser = repair_parser()
    args = parser.parse_args(argv)
    chosen = deployed(parser, args.pipeline)
    configure(verbose_requested())
    settings = Settings()
    if not _reachable(settings, "board-detail-repair"):
        return 2
    from boardstream.reconcile import repair as repairing
    from boardstream.reconcile.evidence.run_ledger import RunLedger
    from boardstream.spark.session import spark_session

    target = _target(settings, chosen)
    try:
        # An unknown run is a user's typo: say so before Spark takes its seconds to start.
        runs = RunLedger.of(target.pipeline.name)
        repairing.stored_snapshot(database.engine(settings.database), runs, args.run)
        spark = spark_session(settings, "repair")
        spark.sparkContext.setLogLevel("WARN")
        done = reconcile.repair_run(
            spark, settings, args.run, args.join_mode, args.join_checkpoint, target
        )
    except BoardstreamError as error:
        print(f"repair: error: {error}", file=sys.stderr)
        return 1
    print(", ".join(f"{step}: {count:,}" for step, count in done.items()), flush=True)
    run_by = f"{args.run_by} (after repair of run {args.run})"
    return _run(
        spark,
        settings,
        run_by,
        args.join_checkpoint,
        args.sink_checkpoint,
        None,
        reconcile.FULL,
        target,
    )
