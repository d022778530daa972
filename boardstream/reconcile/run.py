"""One reconciliation run: snapshot, exact checks, the ledger, the Great Expectations suite,
and a summary a person reads in a terminal or a task log."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from boardstream import database
from boardstream.joins.job import QUERY_NAME as JOIN
from boardstream.kafka.clients import admin_client
from boardstream.reconcile import ledger
from boardstream.reconcile.checks import FAILING, Reconciliation, reconcile
from boardstream.reconcile.expectations import ValidationReport, validate_reconciliation
from boardstream.reconcile.snapshot import take_snapshot
from boardstream.settings import Settings
from boardstream.sink.job import QUERY_NAME as SINK
from boardstream.timing import phase

SUMMARY_ORDER = (
    "source",
    "joined",
    "unmatched",
    "dead_lettered",
    "pending",
    "in_flight",
    *FAILING,
    "topic_replays",
)


@dataclass(frozen=True)
class RunResult:
    run_id: int
    reconciliation: Reconciliation
    validation: ValidationReport

    @property
    def passed(self) -> bool:
        return self.reconciliation.passed and self.validation.success

    def summary(self) -> list[str]:
        counts = self.reconciliation.counts
        verdict = "PASSED" if self.passed else "FAILED"
        lines = [f"reconciliation run {self.run_id}: {verdict}"]
        lines += [f"  {name:<16} {counts.get(name, 0):>10,}" for name in SUMMARY_ORDER]
        for kind, finding in self.reconciliation.findings.items():
            if finding.count and kind != "in_flight":
                lines.append(f"  {kind}: {', '.join(finding.examples)}")
        failed = [o for o in self.validation.outcomes if not o.success]
        lines += [
            f"  expectation failed: {o.expectation} on {o.target} ({o.observed})" for o in failed
        ]
        if self.validation.data_docs_index:
            lines.append(f"  data docs: {self.validation.data_docs_index}")
        return lines


def checkpoints(settings: Settings) -> tuple[Path, Path]:
    return settings.checkpoints / JOIN, settings.checkpoints / SINK


def reconcile_once(
    spark: SparkSession,
    settings: Settings,
    run_by: str,
    join_checkpoint: Path | None = None,
    sink_checkpoint: Path | None = None,
) -> RunResult:
    default_join, default_sink = checkpoints(settings)
    join_checkpoint = join_checkpoint or default_join
    sink_checkpoint = sink_checkpoint or default_sink
    engine = database.engine(settings.database)
    snapshot = take_snapshot(admin_client(settings), settings, join_checkpoint, sink_checkpoint)
    run_id = ledger.start_run(engine, snapshot.to_json(), run_by)
    result = reconcile(spark, settings, snapshot, str(join_checkpoint))
    with phase("reconcile: Great Expectations"):
        validation = validate_reconciliation(
            result.table_snapshot,
            result.expected_table_rows,
            result.difference_sets(),
            settings.data_docs,
            f"reconciliation-{run_id}",
        )
    outcome = RunResult(run_id, result, validation)
    ledger.finish_run(
        engine,
        run_id,
        outcome.passed,
        result.counts,
        {kind: (f.count, f.examples) for kind, f in result.findings.items()},
        str(validation.data_docs_index) if validation.data_docs_index else None,
    )
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    """``jobs/reconcile.py``: exit 0 when the run passes, 1 when anything is missing, extra,
    duplicated or mismatched (the summary says what)."""
    from boardstream.spark.session import spark_session

    parser = argparse.ArgumentParser(prog="reconcile", description=__doc__.splitlines()[0])
    parser.add_argument("--join-checkpoint", type=Path)
    parser.add_argument("--sink-checkpoint", type=Path)
    parser.add_argument("--run-by", default="cli")
    args = parser.parse_args(argv)
    settings = Settings()
    spark = spark_session(settings, "reconcile")
    spark.sparkContext.setLogLevel("WARN")
    result = reconcile_once(
        spark, settings, args.run_by, args.join_checkpoint, args.sink_checkpoint
    )
    print("\n".join(result.summary()), flush=True)
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
