"""One reconciliation run: snapshot, exact checks, the ledger, the Great Expectations suite,
and a summary a person reads in a terminal or a task log."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, NoReturn

from pyspark.sql import SparkSession
from sqlalchemy.engine import Engine

from boardstream import database
from boardstream.errors import BoardstreamError
from boardstream.joins.job import QUERY_NAME as JOIN
from boardstream.kafka.clients import admin_client
from boardstream.reconcile import (
    baseline,
    digest_ledger,
    fact_store,
    incremental,
    ledger,
    table_watch,
)
from boardstream.reconcile.checks import (
    FAILING,
    REPORTED,
    ReconcileOptions,
    Reconciliation,
    conclude,
    reconcile,
)
from boardstream.reconcile.expectations import ValidationReport, validate_reconciliation
from boardstream.reconcile.ledger import (
    FULL,
    INCREMENTAL,
    describe_covered,
    describe_table_slice,
)
from boardstream.reconcile.snapshot import Snapshot, take_snapshot
from boardstream.reconcile.table_buckets import WHOLE
from boardstream.reconcile.vocabulary import SUMMARY_ORDER
from boardstream.settings import Settings
from boardstream.sink.job import QUERY_NAME as SINK
from boardstream.spark.checkpoint_checksums import CheckpointChecksumError
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
    kind: str = FULL
    covered: dict[str, dict[str, list[int]]] | None = None  # per topic and partition: [from, to)
    table_slice: dict[str, Any] | None = None  # the rows of board_detail it looked at

    @property
    def passed(self) -> bool:
        return self.reconciliation.passed and self.validation.success

    def summary(self) -> list[str]:
        counts = self.reconciliation.counts
        verdict = "PASSED" if self.passed else "FAILED"
        lines = [f"reconciliation run {self.run_id} ({self.kind}): {verdict}"]
        if self.covered:
            lines.append(f"  read {describe_covered(self.covered)}")
        if self.table_slice:
            lines.append(f"  looked at {describe_table_slice(self.table_slice)}")
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
    kind: str = FULL,
) -> RunResult:
    """One run, recorded from start to verdict; a run that cannot finish is recorded as
    ERRORED and raises :class:`ReconciliationError`. ``kind``: a full run reads everything and
    fills the digest ledger; an incremental one (#22) reads what arrived since the last run
    and the boards whose rows changed, and is a full one while no full run has filled the
    ledger."""
    if kind not in (FULL, INCREMENTAL):
        raise BoardstreamError(f"a reconciliation is {FULL} or {INCREMENTAL}, not {kind!r}")
    default_join, default_sink = checkpoints(settings)
    join_checkpoint = join_checkpoint or default_join
    sink_checkpoint = sink_checkpoint or default_sink
    engine = database.engine(settings.database)
    for store in (digest_ledger, fact_store, table_watch):
        store.create(engine)
    if kind == INCREMENTAL and not _has_baseline(engine):
        logger.info("no full reconciliation has filled the digest ledger yet: this run is full")
        kind = FULL
    try:
        snapshot = take_snapshot(admin_client(settings), settings, join_checkpoint, sink_checkpoint)
    except CheckpointChecksumError as error:
        # The jobs' own record of their progress was altered: a run of its own, ERRORED, so the
        # refusal stands in the ledger and on the health page, not only in a task log.
        _errored(engine, ledger.start_run(engine, {}, run_by, kind), error)
    options = options or ReconcileOptions()
    # What an earlier run saw a stall age ago: when its records existed at the latest (liveness).
    stall_age = timedelta(milliseconds=options.stall_after_ms)
    earlier = ledger.earlier_snapshot(engine, snapshot.taken_at - stall_age)
    snapshot = replace(snapshot, earlier=earlier)
    run_id = ledger.start_run(engine, snapshot.to_json(), run_by, kind)
    check = _full if kind == FULL else _incremental
    try:
        outcome = check(spark, engine, settings, snapshot, str(join_checkpoint), options)
        validation = _validate(outcome, settings, run_id)
    except Exception as error:
        _errored(engine, run_id, error)
    result = RunResult(
        run_id, outcome.reconciliation, validation, kind, outcome.covered, outcome.table_slice
    )
    ledger.finish_run(
        engine,
        run_id,
        result.passed,
        outcome.reconciliation.counts,
        {k: (f.count, f.examples) for k, f in outcome.reconciliation.findings.items()},
        str(validation.data_docs_index) if validation.data_docs_index else None,
        outcome.reconciliation.balance,
        outcome.covered,
        outcome.table_slice,
    )
    return result


def _errored(engine: Engine, run_id: int, error: Exception) -> NoReturn:
    """Close ``run_id`` as ERRORED with ``error`` and raise it as the run's."""
    logger.exception("reconciliation run %s could not finish", run_id)
    ledger.error_run(engine, run_id, f"{type(error).__name__}: {error}"[:4000])
    raise ReconciliationError(run_id, f"{type(error).__name__}: {error}") from error


@dataclass(frozen=True)
class _Outcome:
    reconciliation: Reconciliation
    validated_rows: int  # the rows of ``reconciliation.table_snapshot`` the checks expect
    covered: dict[str, dict[str, list[int]]]  # per topic and partition, the offsets read
    table_slice: dict[str, Any]  # the rows of board_detail it looked at (ids, count)


def _has_baseline(engine: Engine) -> bool:
    with engine.connect() as connection:
        return bool(digest_ledger.cursor(connection))


def _full(
    spark: SparkSession,
    engine: Engine,
    settings: Settings,
    snapshot: Snapshot,
    join_checkpoint: str,
    options: ReconcileOptions,
) -> _Outcome:
    """Today's run over everything, then its facts, records and rows as the next incremental
    run's baseline, in one transaction."""
    result = reconcile(spark, settings, snapshot, join_checkpoint, options)
    assert result.facts is not None and result.records is not None  # a full run keeps them
    stored = "reconcile: the digest ledger, the facts and the rows as checked"
    with phase(stored), engine.begin() as connection:
        digest_ledger.lock(connection)
        fact_store.reset(connection, result.facts)
        baseline.record(connection, result.records, snapshot.latest, full=True)
        table_watch.remember_all(connection)
    result.facts, result.records = None, None
    whole = table_watch.slice_record(WHOLE, len(result.table_snapshot))
    covered = ledger.covered(snapshot.earliest, snapshot.latest)
    return _Outcome(result, result.expected_table_rows, covered, whole)


def _incremental(
    spark: SparkSession,
    engine: Engine,
    settings: Settings,
    snapshot: Snapshot,
    join_checkpoint: str,
    options: ReconcileOptions,
) -> _Outcome:
    """The keys new data touches and the boards whose rows changed, checked and stored; the
    verdict from the fact store: what the last check of every key found."""
    now_ms = int(time.time() * 1000)
    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
    with phase("reconcile: incremental checks"), engine.begin() as connection:
        checked = incremental.check(
            spark, connection, settings, snapshot, join_checkpoint, options, now_ms
        )
        result = conclude(
            fact_store.counts(connection),
            lambda kind: fact_store.examples(connection, kind, options.examples),
            settings,
            snapshot,
            now_ms,
            options,
            checked.table_snapshot,
            checked.waiting,
        )
    return _Outcome(result, checked.expected_rows, checked.covered, checked.table_slice)


def _validate(outcome: _Outcome, settings: Settings, run_id: int) -> ValidationReport:
    """The Great Expectations suite over the rows the run read (all of them in a full run)."""
    with phase("reconcile: Great Expectations"):
        return validate_reconciliation(
            outcome.reconciliation.table_snapshot,
            outcome.validated_rows,
            outcome.reconciliation.difference_sets(),
            settings.data_docs,
            f"reconciliation-{run_id}",
            settings.data_docs_retention,
        )
