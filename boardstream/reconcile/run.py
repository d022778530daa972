"""One reconciliation run: snapshot, exact checks, the ledger, the Great Expectations suite,
and a summary a person reads in a terminal or a task log."""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn

from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from boardstream import database
from boardstream.errors import BoardstreamError
from boardstream.failpoints import failpoint
from boardstream.kafka import retention
from boardstream.kafka.clients import admin_client
from boardstream.leases import Held, Leases, LeaseTimeoutError
from boardstream.locations import checkpoint_uri
from boardstream.pipelines import query_name
from boardstream.reconcile.checks import liveness
from boardstream.reconcile.checks.spark_checks import (
    FAILING,
    REPORTED,
    ReconcileOptions,
    Reconciliation,
    conclude,
    reconcile,
)
from boardstream.reconcile.checks.vocabulary import SUMMARY_ORDER
from boardstream.reconcile.evidence import docs_store
from boardstream.reconcile.evidence.expectations import (
    Subject,
    ValidationReport,
    validate_reconciliation,
)
from boardstream.reconcile.evidence.heartbeat import Heartbeat
from boardstream.reconcile.evidence.run_ledger import (
    FULL,
    INCREMENTAL,
    RunClosedError,
    covered,
    describe_covered,
    describe_table_slice,
)
from boardstream.reconcile.incremental import baseline, table_watch
from boardstream.reconcile.incremental import inputs as incremental
from boardstream.reconcile.incremental.store import Store
from boardstream.reconcile.incremental.table_buckets import WHOLE
from boardstream.reconcile.reads import expired, readers
from boardstream.reconcile.reads.snapshot import Snapshot, take_snapshot
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import Settings
from boardstream.spark.checkpoint_files import CheckpointFiles, CheckpointFilesError
from boardstream.timing import peak_memory_line, phase

logger = logging.getLogger(__name__)

# Kinds whose ids are listed in the summary; the rest only counted there.
LISTED = (*FAILING, *REPORTED, "sink_dead_lettered")


class ReconciliationError(BoardstreamError):
    """A run could not finish; it is recorded as ERRORED with this error."""

    def __init__(self, run_id: int, error: str) -> None:
        super().__init__(f"reconciliation run {run_id}: ERRORED: {error}")
        self.run_id = run_id


class RecordingError(BoardstreamError):
    """The ledger could not be written (the database gone, or locked past its busy timeout):
    the run is not recorded, or left open for the next run to close as interrupted."""

    def __init__(self, engine: Engine, what: str, error: Exception, run_id: int | None) -> None:
        run = "reconciliation" if run_id is None else f"reconciliation run {run_id}"
        left = "" if run_id is None else "; the next run closes it as interrupted"
        super().__init__(
            f"{run}: could not record {what} in {database.shown(str(engine.url))}: "
            f"{type(error).__name__}: {database.driver_said(error)}{left}"
        )


@dataclass(frozen=True)
class RunResult:
    run_id: int
    reconciliation: Reconciliation
    validation: ValidationReport
    kind: str = FULL
    covered: dict[str, dict[str, list[int]]] | None = None  # per topic and partition: [from, to)
    table_slice: dict[str, Any] | None = None  # the rows of the sink table it looked at
    # Shown before the counts: runs found dead and closed by this one (ledger), outputs that
    # may expire before their source, reconciliation overdue against their retention.
    notices: tuple[str, ...] = ()

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
        lines += [f"  {notice}" for notice in self.notices]
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


def checkpoints(
    settings: Settings,
    target: ReconcileTarget,
    join: str | Path | None = None,
    sink: str | Path | None = None,
) -> tuple[str, str]:
    """The join's and the sink's checkpoints as URIs: those given, else the jobs' own
    (``<pipeline>-join``, ``<pipeline>-sink``)."""
    name = target.pipeline.name
    return (
        settings.checkpoint(query_name(name, "join")) if join is None else checkpoint_uri(join),
        settings.checkpoint(query_name(name, "sink")) if sink is None else checkpoint_uri(sink),
    )


def reconcile_once(
    spark: SparkSession,
    settings: Settings,
    run_by: str,
    join_checkpoint: str | Path | None = None,
    sink_checkpoint: str | Path | None = None,
    options: ReconcileOptions | None = None,
    kind: str = FULL,
    target: ReconcileTarget | None = None,
) -> RunResult:
    """One run, recorded from start to verdict; a run that cannot finish is recorded as
    ERRORED and raises :class:`ReconciliationError`; one that cannot write the ledger raises
    :class:`RecordingError`, and is closed as interrupted by a later run (its heartbeat stops).
    ``kind``: a full run reads everything and fills the digest ledger; an incremental one (#22)
    reads what arrived since the last run and the boards whose rows changed, and is a full one
    while no full run has filled the ledger. ``target``: the pipeline checked (the shipped one
    on the settings' topics when None)."""
    if kind not in (FULL, INCREMENTAL):
        raise BoardstreamError(f"a reconciliation is {FULL} or {INCREMENTAL}, not {kind!r}")
    target = target or ReconcileTarget.shipped(settings)
    join_checkpoint, sink_checkpoint = checkpoints(
        settings, target, join_checkpoint, sink_checkpoint
    )
    engine = database.engine(settings.database)
    store = Store.of(target)
    with _recording(engine, "its start"):
        store.create(engine)
        if kind == INCREMENTAL and not _has_baseline(engine, store):
            logger.info("no full reconciliation has filled the digest ledger yet: this run is full")
            kind = FULL
    with _ledger_held(engine, settings, store) as held:
        try:
            return _run(
                spark,
                engine,
                settings,
                target,
                store,
                run_by,
                join_checkpoint,
                sink_checkpoint,
                options,
                kind,
                held,
            )
        finally:
            logger.info("reconciliation: %s", peak_memory_line())


@contextmanager
def _ledger_held(engine: Engine, settings: Settings, store: Store) -> Iterator[Held]:
    """The ledger's lease for a run from its snapshot to its verdict: one run at a time
    checks and stores, on every host; a second waits for the first (up to the heartbeat's
    bound or the lease's TTL), rather than check data the first is storing. Each store is
    fenced by it."""
    leases = Leases.of(settings)
    said = {"pid": os.getpid(), "host": socket.gethostname()}
    # A holder that died lets it go within the lease's TTL.
    wait_s = max(settings.reconcile_heartbeat_timeout_s, settings.lease_ttl_s)
    with ExitStack() as stack:
        try:
            with _recording(engine, "its start"):
                held = stack.enter_context(leases.hold(store.lease, said, wait_s))
        except LeaseTimeoutError as error:
            raise BoardstreamError(
                f"reconciliation: not started: the ledger {error} (one run at a time)"
            ) from None
        yield held


def _run(
    spark: SparkSession,
    engine: Engine,
    settings: Settings,
    target: ReconcileTarget,
    store: Store,
    run_by: str,
    join_checkpoint: str,
    sink_checkpoint: str,
    options: ReconcileOptions | None,
    kind: str,
    held: Held,
) -> RunResult:
    """:func:`reconcile_once` with the ledger's lease ``held``."""
    admin = admin_client(settings)
    try:
        snapshot = take_snapshot(
            CheckpointFiles(spark),
            admin,
            settings,
            list(target.read),
            join_checkpoint,
            sink_checkpoint,
        )
    except CheckpointFilesError as error:
        # The jobs' own record of their progress altered (a checksum that does not match) or
        # unreadable (on HDFS: a missing or corrupt block): a run of its own, ERRORED, so the
        # refusal stands in the ledger and on the health page, not only in a task log.
        _errored(engine, store, _start(engine, store, {}, run_by, kind)[0], error)
    large: tuple[str, ...] = ()  # why an incremental run is a full one
    if kind == INCREMENTAL:
        with _recording(engine, "its start"):
            kind, large = _incremental_or_full(engine, settings, store, snapshot)
    options = options or ReconcileOptions()
    # What an earlier run saw a stall age ago: when its records existed at the latest (liveness).
    stall_age = timedelta(milliseconds=options.stall_after_ms)
    with _recording(engine, "its start"):
        earlier = store.runs.earlier_snapshot(engine, snapshot.taken_at - stall_age)
    snapshot = replace(snapshot, earlier=earlier)
    with _recording(engine, "its start"):
        last_verdict = store.runs.last_verdict_at(engine)
    at_risk = _evidence_at_risk(admin, settings, target, last_verdict, snapshot)
    run_id, interrupted = _start(engine, store, snapshot.to_json(), run_by, kind)
    notices = (*interrupted, *at_risk, *large)
    check = _full if kind == FULL else _incremental
    with Heartbeat(engine, store.runs, run_id, settings.reconcile_heartbeat_timeout_s):
        try:
            known, storing = check(
                spark, engine, settings, target, store, snapshot, join_checkpoint, options
            )
            # A full run's outcome is known before it stores: Great Expectations runs before the
            # transaction, which on SQLite holds the one write lock (a live sink's lease renews
            # meanwhile); an incremental run's verdict is the fact store's once stored.
            validation = _validate(known, settings, target, run_id) if known else None
            failpoint("reconcile.before_store")
            # The ledger, the facts, the cursor and the verdict in one transaction, written
            # only while this run is open and holds the ledger's lease: a run closed as
            # interrupted, or frozen past its lease, writes nothing. It reads nothing from Spark,
            # so its waits are bounded by the lease's TTL (digest_ledger.lock): a run frozen in
            # it is closed by PostgreSQL before a successor could wait much longer than that.
            with engine.begin() as connection:
                store.runs.hold_open(connection, run_id)
                Leases.of(settings).fence(connection, held)
                outcome = storing(connection)
                validation = validation or _validate(outcome, settings, target, run_id)
                result = RunResult(
                    run_id,
                    outcome.reconciliation,
                    validation,
                    kind,
                    outcome.covered,
                    outcome.table_slice,
                    (*notices, *_catching_up(snapshot, options, outcome)),
                )
                store.runs.record_verdict(
                    connection,
                    run_id,
                    result.passed,
                    outcome.reconciliation.counts,
                    {k: (f.count, f.examples) for k, f in outcome.reconciliation.findings.items()},
                    str(validation.data_docs_index) if validation.data_docs_index else None,
                    outcome.reconciliation.balance,
                    outcome.covered,
                    outcome.table_slice,
                )
        except RunClosedError:
            raise  # closed by another run already: nothing of its own to record
        except Exception as error:
            _errored(engine, store, run_id, error)
    if validation.data_docs_index is not None:  # served from the database, on any host
        with _recording(engine, "its Data Docs", run_id):
            docs_store.save(
                settings.database, validation.data_docs_index.parent, settings.data_docs_retention
            )
    return result


def _catching_up(snapshot: Snapshot, options: ReconcileOptions, outcome: _Outcome) -> list[str]:
    behind = liveness.catching_up(
        snapshot.join,
        int(time.time() * 1000),
        options.stall_after_ms,
        outcome.reconciliation.counts,
    )
    return [behind] if behind else []


@contextmanager
def _recording(engine: Engine, what: str, run_id: int | None = None) -> Iterator[None]:
    """Writing the ledger: a database error becomes :class:`RecordingError`, one line (the
    traceback at DEBUG)."""
    try:
        yield
    except SQLAlchemyError as error:
        logger.debug("reconciliation run %s: could not record %s", run_id, what, exc_info=True)
        raise RecordingError(engine, what, error, run_id) from error


def _start(
    engine: Engine, store: Store, snapshot: dict[str, Any], run_by: str, kind: str
) -> tuple[int, tuple[str, ...]]:
    """A run recorded as started; every other run found open closed as interrupted: this run
    holds the ledger's lease, which a live run would hold, so theirs died or was lost (within
    the lease's TTL, not the heartbeat's bound), and a run that lost it writes nothing more."""
    with _recording(engine, "its start"):
        run_id = store.runs.start_run(engine, snapshot, run_by, kind)
    with _recording(engine, "its start", run_id):
        closed = store.runs.close_interrupted(engine, run_id, timedelta(0))
    for line in closed:
        logger.warning("reconciliation run %s: %s", run_id, line)
    return run_id, tuple(closed)


def _evidence_at_risk(
    admin: AdminClient,
    settings: Settings,
    target: ReconcileTarget,
    last_verdict: datetime | None,
    snapshot: Snapshot,
) -> list[str]:
    """``target``'s outputs that may expire before their source, and a reconciliation overdue
    against the outputs' retention (the last verdict longer ago than it): evidence may age out
    unseen."""
    kept = retention.read_retention(admin, settings, target.topics)
    found = [str(risk) for risk in kept.risks]
    overdue = retention.reconciliation_overdue(last_verdict, snapshot.taken_at, kept.shortest_ms)
    found += [overdue] if overdue else []
    for notice in found:
        logger.warning("%s", notice)
    return found


def _errored(engine: Engine, store: Store, run_id: int, error: Exception) -> NoReturn:
    """Close ``run_id`` as ERRORED with ``error`` and raise it as the run's; when even that
    cannot be written, :class:`RecordingError` says both."""
    reason = f"{type(error).__name__}: {error}"
    with _recording(engine, f"that it could not finish ({reason.splitlines()[0]})", run_id):
        store.runs.error_run(engine, run_id, reason[:4000])
    logger.error("reconciliation run %s could not finish", run_id, exc_info=error)
    raise ReconciliationError(run_id, reason) from error


@dataclass(frozen=True)
class _Outcome:
    reconciliation: Reconciliation
    validated_rows: int  # the rows of ``reconciliation.table_snapshot`` the checks expect
    rechecked_boards: int | None  # an incremental run's: the boards whose rows it read
    covered: dict[str, dict[str, list[int]]]  # per topic and partition, the offsets read
    table_slice: dict[str, Any]  # the rows of the sink table it looked at (ids, count)


def _has_baseline(engine: Engine, store: Store) -> bool:
    with engine.connect() as connection:
        return bool(store.ledger.cursor(connection))


def _incremental_or_full(
    engine: Engine, settings: Settings, store: Store, snapshot: Snapshot
) -> tuple[str, tuple[str, ...]]:
    """An incremental run holds its new records in the driver and checks them in process: more
    of them than a full run would check there (``reconcile_in_process_max_records``) and it is a
    full run instead, in Spark, which costs what a full run costs (a backlog loaded at once:
    the production-scale demo's 900,000 records). The notice says why."""
    with engine.connect() as connection:
        new = snapshot.records_after(store.ledger.cursor(connection))
    bound = settings.reconcile_in_process_max_records
    if new <= bound:
        return INCREMENTAL, ()
    notice = (
        f"{new:,} new records since the last run, more than an incremental run checks in "
        f"process ({bound:,}: BOARDSTREAM_RECONCILE_IN_PROCESS_MAX_RECORDS): this run is full"
    )
    logger.info("%s", notice)
    return FULL, (notice,)


# What a check found, stored in the caller's transaction: its outcome once stored.
Storing = Callable[[Connection], _Outcome]
# A check's outcome where it is known before it is stored (a full run's), and its store.
Found = tuple[_Outcome | None, Storing]


def _full(
    spark: SparkSession,
    engine: Engine,
    settings: Settings,
    target: ReconcileTarget,
    store: Store,
    snapshot: Snapshot,
    join_checkpoint: str,
    options: ReconcileOptions,
) -> Found:
    """Today's run over everything; stored: its facts, records and rows as the next
    incremental run's baseline."""
    result, snapshot, kept = check_snapshot(
        spark, engine, settings, target, snapshot, join_checkpoint, options, store
    )
    assert result.facts is not None and result.records is not None  # a full run keeps them
    facts, records = result.facts, result.records
    result.facts, result.records = None, None
    whole = table_watch.slice_record(target.table.table.name, WHOLE, len(result.table_snapshot))
    read = covered(snapshot.earliest, snapshot.latest)

    outcome = _Outcome(result, result.expected_table_rows, None, read, whole)
    # Staged ahead of the verdict's transaction, a batch per transaction, so that it holds
    # SQLite's one write lock for the database's copy of them, not for their conversion.
    with phase("reconcile: stage the facts, the records' digests and the table's rows"):
        staged_facts = store.facts.stage(engine, facts)
        staged_records = baseline.stage(engine, store.ledger, records)
        staged_rows = store.watch.stage_all(engine, target.table)

    def storing(connection: Connection) -> _Outcome:
        with phase("reconcile: the digest ledger, the facts and the rows as checked"):
            store.ledger.lock(connection, settings.lease_ttl_s)
            store.ledger.add_unseen(connection, kept.new_unseen)
            with phase("reconcile: store the facts"):
                store.facts.reset(connection, staged_facts)
            with phase("reconcile: store the records' digests"):
                baseline.record_staged(connection, store.ledger, staged_records, snapshot.latest)
            with phase("reconcile: remember the table's rows"):
                store.watch.remember_all(connection, target.table, staged_rows)
        return outcome

    return outcome, storing


def check_snapshot(
    spark: SparkSession,
    engine: Engine,
    settings: Settings,
    target: ReconcileTarget,
    snapshot: Snapshot,
    join_checkpoint: str,
    options: ReconcileOptions | None = None,
    store: Store | None = None,
) -> tuple[Reconciliation, Snapshot, expired.Kept]:
    """A full run's checks of ``snapshot``, stored nowhere: its reads (the table, then the
    topics: :func:`readers.read_run`, which moves its start offsets), the ledger's evidence of
    what the outputs deleted, and every check. A full run's and repair's. ``store``: the
    pipeline's (:meth:`Store.of` by default)."""
    read, snapshot, table_read = readers.read_run(spark, settings, target, snapshot)
    ledger = (store or Store.of(target)).ledger
    with engine.connect() as connection:
        kept = expired.kept(connection, ledger, target, snapshot)
    found = reconcile(
        spark, settings, target, snapshot, join_checkpoint, kept, read, table_read, options
    )
    return found, snapshot, kept


def _incremental(
    spark: SparkSession,
    engine: Engine,
    settings: Settings,
    target: ReconcileTarget,
    store: Store,
    snapshot: Snapshot,
    join_checkpoint: str,
    options: ReconcileOptions,
) -> Found:
    """The keys new data touches and the ids whose rows changed, checked (reading only);
    stored: their facts, then the verdict from the fact store, what the last check of every
    key found."""
    now_ms = int(time.time() * 1000)
    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
    with phase("reconcile: incremental checks"), engine.connect() as connection:
        checked = incremental.check(
            spark, connection, settings, target, store, snapshot, join_checkpoint, options, now_ms
        )

    def storing(connection: Connection) -> _Outcome:
        incremental.store(connection, store, checked, settings.lease_ttl_s)
        result = conclude(
            store.facts.counts(connection),
            lambda kind: store.facts.examples(connection, kind, options.examples),
            settings,
            target.topics,
            snapshot,
            now_ms,
            options,
            checked.table_snapshot,
            checked.waiting,
        )
        return _Outcome(
            result,
            checked.expected_rows,
            len(checked.keys.boards),
            checked.covered,
            checked.table_slice,
        )

    return None, storing


def _validate(
    outcome: _Outcome, settings: Settings, target: ReconcileTarget, run_id: int
) -> ValidationReport:
    """The Great Expectations suite over the rows the run read (all of them in a full run)."""
    with phase("reconcile: Great Expectations"):
        report = validate_reconciliation(
            Subject.of(target),
            outcome.reconciliation.table_snapshot,
            outcome.validated_rows,
            outcome.reconciliation.difference_sets(),
            settings.data_docs,
            f"reconciliation-{run_id}",
            settings.data_docs_retention,
            outcome.rechecked_boards,
        )
    return report
