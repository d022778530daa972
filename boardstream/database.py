"""SQLAlchemy engines for boardstream's database, PostgreSQL or the embedded SQLite default."""

from __future__ import annotations

import functools
import math
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.schema import CreateIndex, CreateTable

from boardstream.errors import BoardstreamError

_INSERT_BATCH = 50_000  # rows per executemany of insert_rows
LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL's SQLSTATE for a lock_timeout that ran out


# How long a write waits for SQLite's one write lock: longer than any writer of the platform
# holds it (a sink batch of 100,000 rows: 15-18 s; a full reconciliation's ledger at production
# scale), so that the jobs, the live streams and a reconciliation started by hand share one
# file. pysqlite's default, 5 s, failed a reconciliation beside a production-scale sink (#67).
SQLITE_BUSY_TIMEOUT_S = 60.0
WAL_SWITCH_POLL_S = 0.05  # between tries to switch a new database's journal to WAL

T = TypeVar("T")
# Values per IN list: under SQLite's oldest limit of 999 bound parameters.
IN_LIST = 900


def chunks(items: Sequence[T], size: int = IN_LIST) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``: lookups by IN lists that stay under
    a database's bound-parameter limit."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def engine(url: str, connect_timeout_s: float | None = None) -> Engine:
    """An engine for ``url``. SQLite gets its file's directory made (a var dir not yet used) and
    write-ahead logging, so reconciliation can read while
    the sink writes, and synchronous=NORMAL, which in WAL mode still survives a process crash
    (only an OS crash may lose the last commits, and the sink replays those from Kafka), and a
    busy timeout longer than the platform's writers hold SQLite's one write lock
    (:data:`SQLITE_BUSY_TIMEOUT_S`). ``connect_timeout_s`` bounds PostgreSQL's connect (a host
    that drops packets would otherwise hold libpq for the system's TCP timeout, minutes)."""
    parsed = sa.make_url(url)
    sqlite = parsed.get_backend_name() == "sqlite"
    # A URL's own ?timeout= (pysqlite's) stands.
    busy = sqlite and "timeout" not in parsed.query
    connect_args: dict[str, Any] = {"timeout": SQLITE_BUSY_TIMEOUT_S} if busy else {}
    if connect_timeout_s is not None and parsed.get_backend_name() == "postgresql":
        connect_args["connect_timeout"] = math.ceil(connect_timeout_s)
    created = sa.create_engine(url, pool_pre_ping=True, connect_args=connect_args)
    if sqlite:
        sa.event.listen(created, "connect", _sqlite_pragmas)
        database = created.url.database
        if database and database != ":memory:":  # SQLite creates the file, not its directory
            Path(database).parent.mkdir(parents=True, exist_ok=True)
    return created


def create_tables(engine: Engine, metadata: sa.MetaData) -> None:
    """``metadata``'s tables and indexes, those missing: ``IF NOT EXISTS``, so that processes
    creating them at once (two supervisors' first start) do not fail each other, as
    ``create_all``'s look-then-create does. A table made by an older version gains the
    nullable columns it lacks (:func:`add_missing_columns`)."""
    with engine.begin() as connection:
        for table in metadata.sorted_tables:
            connection.execute(CreateTable(table, if_not_exists=True))
            for index in table.indexes:
                connection.execute(CreateIndex(index, if_not_exists=True))
    for table in metadata.sorted_tables:
        add_missing_columns(engine, table)


def add_missing_columns(engine: Engine, table: sa.Table) -> None:
    """Add to ``table`` in the database the columns of its definition it lacks, which a newer
    version added: nullable ones only, so every row already there stays valid."""
    present = {column["name"] for column in sa.inspect(engine).get_columns(table.name)}
    with engine.begin() as connection:
        for column in table.columns:
            if column.name not in present:
                kind = column.type.compile(engine.dialect)
                connection.execute(
                    sa.text(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}")
                )


@functools.cache
def engine_with(url: str, metadata: sa.MetaData) -> Engine:
    """One engine per process for ``url`` with ``metadata``'s tables in place: callers that ask
    again (a health check every few seconds) neither reconnect nor create tables again. A
    database that cannot be reached raises, and is tried again at the next call."""
    created = engine(url)
    create_tables(created, metadata)
    return created


def shown(url: str) -> str:
    """``url`` as an error message may name it: without its password."""
    return sa.make_url(url).render_as_string(hide_password=True)


def driver_said(error: Exception) -> str:
    """The first line of what the database driver said, without SQLAlchemy's SQL and its link
    to the background of the error: one line for a message or a log."""
    return (str(getattr(error, "orig", None) or error).strip().splitlines() or [""])[0]


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    _switch_to_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _switch_to_wal(cursor: Any) -> None:
    """Write-ahead logging, once another connection lets it. Switching a new database's
    journal needs its exclusive lock, and SQLite answers "database is locked" at once while a
    connection still in the old journal holds a write, without the busy timeout's wait: two
    processes (or threads) making the same new database failed each other (two supervisors'
    first start). The wait is bounded like the busy timeout's."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
            time.sleep(WAL_SWITCH_POLL_S)


def clock_ms(dialect: Dialect) -> sa.ColumnElement[int]:
    """The database's clock, in ms since the epoch, as an expression the database evaluates:
    what leases expire by, so that hosts whose own clocks disagree still agree on it.
    PostgreSQL reads the server's clock at the statement (``clock_timestamp()``, not the
    transaction's start); SQLite, a file on one host, that host's, which all its processes
    share."""
    if dialect.name == "postgresql":
        sql = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
    elif dialect.name == "sqlite":
        sql = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)"
    else:
        raise BoardstreamError(f"the database's clock: PostgreSQL or SQLite, not {dialect.name}")
    return sa.literal_column(sql, sa.BigInteger)


def bound_waits(connection: Connection, lock_ms: int, idle_ms: int) -> None:
    """Bound, for the rest of the caller's transaction, how long it waits for a lock and how
    long it may hold its own while its process does nothing (PostgreSQL): a lock not granted
    within ``lock_ms`` fails the statement that waits, and a session idle inside the
    transaction for ``idle_ms`` (its process frozen: SIGSTOP, swap, a debugger) is closed by
    the server, its transaction rolled back and its locks freed for whoever waits. SQLite has
    no server to close anything: a waiter waits its busy timeout, then fails as "database is
    locked", and a frozen holder keeps the one writer lock until it resumes or dies."""
    if connection.dialect.name == "postgresql":
        connection.execute(
            sa.text(
                "SELECT set_config('lock_timeout', :lock, true), "
                "set_config('idle_in_transaction_session_timeout', :idle, true)"
            ),
            {"lock": _ms(lock_ms), "idle": _ms(idle_ms)},
        )


def _ms(bound_ms: int) -> str:
    """A PostgreSQL timeout of ``bound_ms``: at least 1 ms, as 0 would mean no bound at all."""
    return f"{max(int(bound_ms), 1)}ms"


def lock_timed_out(error: SQLAlchemyError) -> bool:
    """Whether ``error`` is a lock waited for past :func:`bound_waits`' bound (PostgreSQL)."""
    return getattr(getattr(error, "orig", None), "pgcode", None) == LOCK_NOT_AVAILABLE


def upsert_insert(dialect: Dialect, table: sa.Table, what: str) -> Any:
    """An INSERT of ``table`` in ``dialect``'s own flavour, which has ``on_conflict_do_*``
    (the standard one has not); ``what`` names the caller in the error for other databases."""
    if dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect.name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:
        raise BoardstreamError(f"{what} support PostgreSQL and SQLite, not {dialect.name}")
    return insert(table)


def insert_rows(
    connection: Connection, table: sa.Table, rows: pa.Table, skip_present: bool = False
) -> None:
    """``rows`` (Arrow, named as ``table``'s columns) into ``table``, in the caller's
    transaction; with ``skip_present``, rows whose key is there already are skipped. SQLite
    gets them as tuples straight through its driver: SQLAlchemy's per-row dicts cost about ten
    times the insert itself (447,017 ledger rows). Other databases through SQLAlchemy."""
    if rows.num_rows == 0:
        return
    names = rows.column_names
    if connection.dialect.name == "sqlite":
        conflict = " ON CONFLICT DO NOTHING" if skip_present else ""
        quoted = ", ".join(f'"{name}"' for name in names)
        marks = ", ".join("?" * len(names))
        sql = f"INSERT INTO {table.name} ({quoted}) VALUES ({marks}){conflict}"
        for batch in rows.to_batches(_INSERT_BATCH):
            columns = [column.to_pylist() for column in batch.columns]
            connection.exec_driver_sql(sql, list(zip(*columns, strict=True)))
        return
    statement = upsert_insert(connection.dialect, table, "bulk inserts")
    if skip_present:
        statement = statement.on_conflict_do_nothing()
    for batch in rows.to_batches(_INSERT_BATCH):
        connection.execute(statement, batch.to_pylist())
