"""The tables ``reconciliation_run`` (one row per run: the snapshot, the jobs' progress, the
counts, the balance, the verdict) and ``reconciliation_issue`` (per finding, its count and
example ids), so every number in a summary can be traced to ids later, by the UI page or by a
repair. A run ends PASSED, FAILED or ERRORED (with its error): never left half-written. A run
whose process dies before it records its end (kill -9, a power cut, its database gone) stops
refreshing its heartbeat (``heartbeat_at``, see heartbeat.py) and its ledger's lease; the next
run, once it holds the lease, closes it as ERRORED, interrupted (:func:`close_interrupted`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from boardstream.database import add_missing_columns
from boardstream.errors import BoardstreamError
from boardstream.joins.topics import Deployed
from boardstream.pipelines.names import store_table
from boardstream.reconcile.reads.snapshot import EarlierSnapshot
from boardstream.settings import Settings

FULL, INCREMENTAL = "full", "incremental"
EARLIER_RUNS = 100  # runs looked at for an earlier snapshot (a refused run has none)
PASSED, FAILED, ERRORED = "PASSED", "FAILED", "ERRORED"


def _tables(metadata: sa.MetaData, pipeline: str) -> tuple[sa.Table, sa.Table]:
    """A pipeline's runs and their findings."""
    run_name = store_table(pipeline, "reconciliation_run")
    run = sa.Table(
        run_name,
        metadata,
        sa.Column("run_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("passed", sa.Boolean),
        sa.Column("snapshot", sa.JSON, nullable=False),  # offsets and the jobs' progress
        sa.Column("counts", sa.JSON),
        sa.Column("run_by", sa.Text, nullable=False),
        sa.Column("data_docs", sa.Text),  # path of the Great Expectations Data Docs index
        sa.Column("status", sa.String(16)),  # PASSED, FAILED, ERRORED; NULL while running
        sa.Column("error", sa.Text),  # why an ERRORED run could not finish
        sa.Column("balance", sa.JSON),  # per source partition, the balance's classes
        sa.Column("kind", sa.String(16)),  # full or incremental (NULL: before #22, full)
        # Per topic and partition, the offsets [from, to) the run read.
        sa.Column("covered", sa.JSON),
        # The slice of the sink table the run looked at for changed rows: {"after", "through",
        # "rows"} (ids None: unbounded on that side), see reconcile.table_watch.
        sa.Column("table_slice", sa.JSON),
        # Refreshed while the run runs; NULL: a run from before heartbeats (its started_at
        # counts).
        sa.Column("heartbeat_at", sa.DateTime(timezone=True)),
    )
    issue = sa.Table(
        store_table(pipeline, "reconciliation_issue"),
        metadata,
        sa.Column("run_id", sa.Integer, sa.ForeignKey(f"{run_name}.run_id"), primary_key=True),
        sa.Column("finding", sa.String(40), primary_key=True),
        sa.Column("count", sa.BigInteger, nullable=False),
        sa.Column("example_ids", sa.JSON, nullable=False),
    )
    return run, issue


def covered(
    start: dict[str, dict[int, int]], end: dict[str, dict[int, int]]
) -> dict[str, dict[str, list[int]]]:
    """Per topic and partition of ``end``, the offsets [from ``start`` (0 if absent), end)."""
    return {
        topic: {str(p): [start.get(topic, {}).get(p, 0), to] for p, to in ends.items()}
        for topic, ends in end.items()
    }


def describe_covered(covered: dict[str, dict[str, list[int]]]) -> str:
    """The offsets a run read, as a person reads them: ``board 0:[120, 180) 1:[95, 140); ...``
    (partitions it read nothing of left out; a topic with none of them, too)."""
    parts = []
    for topic, ranges in sorted(covered.items()):
        read = [
            f"{p}:[{start:,}, {end:,})"
            for p, (start, end) in sorted(ranges.items(), key=lambda item: int(item[0]))
            if end > start
        ]
        if read:
            parts.append(f"{topic} {' '.join(read)}")
    return "; ".join(parts) or "nothing new"


def describe_table_slice(table_slice: dict[str, Any]) -> str:
    """The rows a run looked at for changes: ``all 447,017 rows of order_customer`` or
    ``500,000 rows of order_customer, ids after 'o-1' through 'o-9'``."""
    after, through, rows = table_slice["after"], table_slice["through"], table_slice["rows"]
    table = table_slice["table"]
    if after is None and through is None:
        return f"all {rows:,} rows of {table}"
    start = "from the first" if after is None else f"after {after!r}"
    end = "to the last" if through is None else f"through {through!r}"
    return f"{rows:,} rows of {table}, ids {start} {end}"


class RunClosedError(BoardstreamError):
    """A run's verdict came after another run had closed it as interrupted (its heartbeat
    older than the bound): the ledger keeps what it says, the verdict is not recorded."""


def _utc(moment: datetime | str) -> str:
    """A moment as the summary writes it; SQLite gives naive UTC datetimes (or, for an
    expression such as COALESCE, their stored text)."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    return f"{moment.astimezone(UTC) if moment.tzinfo else moment:%Y-%m-%d %H:%M:%S} UTC"


def status_of(run: dict[str, Any]) -> str:
    """A recorded run's verdict as every reader prints it: PASSED, FAILED, ERRORED, or RUNNING
    while open. Runs recorded before the status column existed have only ``passed``."""
    return run.get("status") or {True: PASSED, False: FAILED}.get(run["passed"], "RUNNING")


@dataclass(frozen=True, eq=False)
class RunLedger:
    """One pipeline's runs (:meth:`RunLedger.of`), in tables named after it: a run of one
    pipeline never reads, closes or waits for another's."""

    pipeline: str
    metadata: sa.MetaData
    run_table: sa.Table
    issue_table: sa.Table

    @staticmethod
    @cache
    def of(pipeline: str) -> RunLedger:
        metadata = sa.MetaData()
        return RunLedger(pipeline, metadata, *_tables(metadata, pipeline))

    @staticmethod
    def shipped(settings: Settings) -> RunLedger:
        """The shipped pipeline's, which the health page, the demo and repair read."""
        return RunLedger.of(Deployed.shipped(settings).pipeline.name)

    def create(self, engine: Engine) -> None:
        """Create the tables, and add columns a database made by an older version lacks."""
        self.metadata.create_all(engine)
        add_missing_columns(engine, self.run_table)

    def earlier_snapshot(self, engine: Engine, before: datetime) -> EarlierSnapshot | None:
        """What the newest run started by ``before`` saw (runs refused before they could take a
        snapshot are passed over); None when there is none."""
        self.create(engine)
        r = self.run_table.c
        query = (
            sa.select(r.snapshot)
            .where(r.started_at <= before)
            .order_by(r.started_at.desc(), r.run_id.desc())
            .limit(EARLIER_RUNS)
        )
        with engine.connect() as connection:
            for (raw,) in connection.execute(query):
                if raw:
                    return EarlierSnapshot.of(raw)
        return None

    def start_run(
        self, engine: Engine, snapshot: dict[str, Any], run_by: str, kind: str = FULL
    ) -> int:
        self.create(engine)
        now = datetime.now(UTC)
        with engine.begin() as connection:
            result = connection.execute(
                self.run_table.insert().values(
                    started_at=now, heartbeat_at=now, snapshot=snapshot, run_by=run_by, kind=kind
                )
            )
            return result.inserted_primary_key[0]

    def beat(self, engine: Engine, run_id: int) -> None:
        """The run is alive: its heartbeat now (a closed run's is left as it was)."""
        with engine.begin() as connection:
            connection.execute(
                self.run_table.update()
                .where(self.run_table.c.run_id == run_id, self.run_table.c.status.is_(None))
                .values(heartbeat_at=datetime.now(UTC))
            )

    def close_interrupted(
        self, engine: Engine, by_run: int, timeout: timedelta, now: datetime | None = None
    ) -> list[str]:
        """Close as ERRORED the open runs (other than ``by_run``) whose heartbeat, or start when
        they have none, is older than ``timeout``: nothing refreshes it any more, so their process
        died without recording an end. A line per run closed, for ``by_run``'s summary."""
        now = now or datetime.now(UTC)
        r = self.run_table.c
        last_seen = sa.func.coalesce(r.heartbeat_at, r.started_at)
        stale = sa.and_(r.status.is_(None), r.run_id != by_run, last_seen < now - timeout)
        error = f"interrupted: found open by run {by_run} at {now:%Y-%m-%d %H:%M:%S} UTC"
        closed = []
        with engine.begin() as connection:
            found = connection.execute(
                sa.select(r.run_id, r.started_at, last_seen).where(stale).order_by(r.run_id)
            ).all()
            for run_id, started_at, seen in found:
                # Still stale in the same statement: a run that finished meanwhile is left alone.
                updated = connection.execute(
                    self.run_table.update()
                    .where(stale, r.run_id == run_id)
                    .values(finished_at=now, passed=False, status=ERRORED, error=error)
                )
                if updated.rowcount:
                    closed.append(
                        f"run {run_id} closed as {ERRORED}: {error} (started {_utc(started_at)}, "
                        f"last heartbeat {_utc(seen)})"
                    )
        return closed

    def hold_open(self, connection: Connection, run_id: int) -> None:
        """Lock ``run_id``'s row for the caller's transaction while the run is open (a row lock on
        PostgreSQL, the one write lock on SQLite), so that what the transaction writes commits only
        with the run still open and no other run can close it meanwhile; a run another closed as
        interrupted (its heartbeat too old, its process frozen) writes nothing:
        :class:`RunClosedError`."""
        r = self.run_table.c
        held = connection.execute(
            self.run_table.update()
            .where(r.run_id == run_id, r.status.is_(None))
            .values(heartbeat_at=datetime.now(UTC))
        )
        if not held.rowcount:
            closed = connection.execute(sa.select(r.error).where(r.run_id == run_id)).scalar()
            raise RunClosedError(
                f"reconciliation run {run_id}: verdict not recorded: another run closed it while "
                f"it ran, its heartbeat too old ({closed})"
            )

    def record_verdict(
        self,
        connection: Connection,
        run_id: int,
        passed: bool,
        counts: dict[str, int],
        findings: dict[str, tuple[int, list[str]]],
        data_docs: str | None,
        balance: dict[int, dict[str, int]] | None = None,
        covered: dict[str, dict[str, list[int]]] | None = None,
        table_slice: dict[str, Any] | None = None,
    ) -> None:
        """Record a run's verdict in the caller's transaction, which holds the run open
        (:func:`hold_open`)."""
        r = self.run_table.c
        connection.execute(
            self.run_table.update()
            .where(r.run_id == run_id, r.status.is_(None))
            .values(
                finished_at=datetime.now(UTC),
                passed=passed,
                status=PASSED if passed else FAILED,
                counts=counts,
                data_docs=data_docs,
                balance={str(p): classes for p, classes in (balance or {}).items()},
                covered=covered,
                table_slice=table_slice,
            )
        )
        rows = [
            {"run_id": run_id, "finding": kind, "count": count, "example_ids": examples}
            for kind, (count, examples) in findings.items()
        ]
        if rows:
            connection.execute(self.issue_table.insert(), rows)

    def finish_run(self, engine: Engine, run_id: int, *verdict: Any) -> None:
        """Record a run's verdict (:func:`record_verdict`'s arguments), unless another run closed
        it meanwhile (:class:`RunClosedError`)."""
        with engine.begin() as connection:
            self.hold_open(connection, run_id)
            self.record_verdict(connection, run_id, *verdict)

    def error_run(self, engine: Engine, run_id: int, error: str) -> None:
        """Close a run that could not finish: ERRORED with its error, neither passed nor failed
        (one another run closed as interrupted meanwhile keeps that)."""
        with engine.begin() as connection:
            connection.execute(
                self.run_table.update()
                .where(self.run_table.c.run_id == run_id, self.run_table.c.status.is_(None))
                .values(finished_at=datetime.now(UTC), passed=False, status=ERRORED, error=error)
            )

    def run(self, engine: Engine, run_id: int) -> dict[str, Any] | None:
        self.create(engine)
        with engine.connect() as connection:
            row = connection.execute(
                sa.select(self.run_table).where(self.run_table.c.run_id == run_id)
            ).first()
            if row is None:
                return None
            issues = connection.execute(
                sa.select(self.issue_table).where(self.issue_table.c.run_id == run_id)
            )
            return {
                **row._asdict(),
                "issues": {i.finding: (i.count, i.example_ids) for i in issues},
            }

    def recent_runs(self, engine: Engine, limit: int = 20) -> list[dict[str, Any]]:
        """The newest ``limit`` runs, newest first, each with its findings (as :func:`run`)."""
        self.create(engine)
        with engine.connect() as connection:
            ids = connection.execute(
                sa.select(self.run_table.c.run_id)
                .order_by(self.run_table.c.run_id.desc())
                .limit(limit)
            ).scalars()
            ids = list(ids)
        return [found for run_id in ids if (found := self.run(engine, run_id)) is not None]

    def last_verdict_at(self, engine: Engine) -> datetime | None:
        """When the newest run that reached a verdict (PASSED or FAILED) began: how recently
        reconciliation looked at the outputs, however many runs errored since."""
        r = self.run_table.c
        verdict = sa.or_(
            r.status.in_((PASSED, FAILED)),
            # Runs recorded before the status column existed have only ``passed``.
            sa.and_(r.status.is_(None), r.passed.is_not(None)),
        )
        query = sa.select(sa.func.max(r.started_at)).where(verdict)
        self.create(engine)
        with engine.connect() as connection:
            began = connection.execute(query).scalar()
        # SQLite keeps no time zone; the ledger writes UTC.
        return began.replace(tzinfo=UTC) if began and began.tzinfo is None else began
