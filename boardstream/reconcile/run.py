"""One reconciliation run: snapshot, exact checks, the ledger, the Great Expectations suite,
and a summary a person reads in a terminal or a task log."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from boardstream import database
from boardstream.errors import BoardstreamError
from boardstream.joins.job import QUERY_NAME as JOIN
from boardstream.kafka.clients import admin_client
from boardstream.reconcile import ledger
from boardstream.reconcile.checks import (
    FAILING,
    REPORTED,
    ReconcileOptions,
    Reconciliation,
    reconcile,
)
from boardstream.reconcile.expectations import ValidationReport, validate_reconciliation
from boardstream.reconcile.snapshot import Snapshot, take_snapshot
from boardstream.reconcile.vocabulary import SUMMARY_ORDER
from boardstream.settings import Settings
from boardstream.sink.job import QUERY_NAME as SINK
from boardstream.timing import phase

logger = logging.getLogger(__name__)

# Kinds whose ids are listed in the summary; the rest only counted there.
LISTED = (*FAILING, *REPORTED, "sink_dead_lettered")


class ReconciliationError(BoardstreamError):
    """A run could not finish; it is recorded as ERRORED with this error."""

    def __init__(self, run_id: int, error: str) -> None:
        super().__init__(f"reconciliation run {run_id}: ERRORED: {error}")
        self.run_id = run_id


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
        lines += [f"  {name:<22} {counts.get(name, 0):>10,}" for name in SUMMARY_ORDER]
        lines += [f"  {equation}" for equation in self.reconciliation.equations()]
        for kind in LISTED:
            finding = self.reconciliation.findings[kind]
            if finding.count:
                lines.append(f"  {kind}: {', '.join(finding.examples)}")
        waiting = self.reconciliation.waiting
        if waiting:
            shown = "" if len(waiting) == counts.get("pending", 0) else f" (oldest {len(waiting)})"
            lines.append(f"  pending{shown}, waiting for their member:")
            lines += [f"    {line}" for line in waiting]
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
    options: ReconcileOptions | None = None,
) -> RunResult:
    """One run, recorded from start to verdict; a run that cannot finish is recorded as
    ERRORED and raises :class:`ReconciliationError`."""
    default_join, default_sink = checkpoints(settings)
    join_checkpoint = join_checkpoint or default_join
    sink_checkpoint = sink_checkpoint or default_sink
    engine = database.engine(settings.database)
    snapshot = take_snapshot(admin_client(settings), settings, join_checkpoint, sink_checkpoint)
    run_id = ledger.start_run(engine, snapshot.to_json(), run_by)
    try:
        outcome = _check(spark, settings, snapshot, run_id, str(join_checkpoint), options)
    except Exception as error:
        logger.exception("reconciliation run %s could not finish", run_id)
        ledger.error_run(engine, run_id, f"{type(error).__name__}: {error}"[:4000])
        raise ReconciliationError(run_id, f"{type(error).__name__}: {error}") from error
    result = outcome.reconciliation
    ledger.finish_run(
        engine,
        run_id,
        outcome.passed,
        result.counts,
        {kind: (f.count, f.examples) for kind, f in result.findings.items()},
        str(outcome.validation.data_docs_index) if outcome.validation.data_docs_index else None,
        result.balance,
    )
    return outcome


def _check(
    spark: SparkSession,
    settings: Settings,
    snapshot: Snapshot,
    run_id: int,
    join_checkpoint: str,
    options: ReconcileOptions | None,
) -> RunResult:
    result = reconcile(spark, settings, snapshot, join_checkpoint, options)
    with phase("reconcile: Great Expectations"):
        validation = validate_reconciliation(
            result.table_snapshot,
            result.expected_table_rows,
            result.difference_sets(),
            settings.data_docs,
            f"reconciliation-{run_id}",
            settings.data_docs_retention,
        )
    return RunResult(run_id, result, validation)
