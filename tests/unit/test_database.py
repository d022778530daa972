"""Database engines (boardstream/database.py): the embedded SQLite default runs in write-ahead
logging with synchronous=NORMAL on every connection (so reconciliation can read while the sink
writes), and other databases get no SQLite pragmas. SQLite runs in this process on a file
under a temporary directory; a PostgreSQL URL is only parsed, never connected to."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from boardstream.database import (
    SQLITE_BUSY_TIMEOUT_S,
    _sqlite_pragmas,
    _switch_to_wal,
    chunks,
    engine,
)

NORMAL = 1  # PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL


def pragmas(connection: sa.Connection) -> tuple[str, int]:
    journal = connection.exec_driver_sql("PRAGMA journal_mode").scalar_one()
    synchronous = connection.exec_driver_sql("PRAGMA synchronous").scalar_one()
    return journal, synchronous


def test_sqlite_runs_in_wal_mode_with_normal_sync(tmp_path: Path) -> None:
    created = engine(f"sqlite:///{tmp_path / 'boardstream.db'}")
    try:
        with created.connect() as connection:
            assert pragmas(connection) == ("wal", NORMAL)
        assert (tmp_path / "boardstream.db").exists()
    finally:
        created.dispose()


def test_every_new_sqlite_connection_gets_the_pragmas(tmp_path: Path) -> None:
    """synchronous is per connection (WAL is per file): a pooled second connection needs it
    too."""
    created = engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    try:
        with created.connect() as first, created.connect() as second:
            assert pragmas(first) == pragmas(second) == ("wal", NORMAL)
    finally:
        created.dispose()


def test_other_databases_get_no_sqlite_pragmas() -> None:
    created = engine("postgresql+psycopg2://user@db.invalid:5432/boardstream")
    assert created.dialect.name == "postgresql"
    assert not sa.event.contains(created, "connect", _sqlite_pragmas)
    assert created.pool._pre_ping


def test_sqlite_engines_ping_pooled_connections(tmp_path: Path) -> None:
    created = engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    assert sa.event.contains(created, "connect", _sqlite_pragmas)
    assert created.pool._pre_ping
    created.dispose()


def test_chunks_are_consecutive_slices_of_at_most_the_size() -> None:
    assert list(chunks(list(range(5)), 2)) == [[0, 1], [2, 3], [4]]
    assert list(chunks(["a", "b"], 2)) == [["a", "b"]]
    assert list(chunks([], 3)) == []
    assert [len(c) for c in chunks(list(range(1_801)))] == [900, 900, 1]


def test_a_sqlite_database_in_a_var_dir_not_made_yet_is_created(tmp_path: Path) -> None:
    """A stream's first request may come before anything wrote to a new var dir."""
    url = f"sqlite:///{tmp_path / 'var' / 'new' / 'boardstream.db'}"
    with engine(url).begin() as connection:
        assert connection.execute(sa.text("SELECT 1")).scalar() == 1
    assert (tmp_path / "var" / "new" / "boardstream.db").is_file()


def test_sqlite_waits_the_platforms_busy_timeout_unless_its_url_says(tmp_path) -> None:
    """60 s for SQLite's write lock (a sink batch holds it 15-18 s; pysqlite's 5 s failed a
    reconciliation beside it, #67); a URL's own ``?timeout=`` stands."""
    for url, waits in (
        (f"sqlite:///{tmp_path / 'a.db'}", SQLITE_BUSY_TIMEOUT_S),
        (f"sqlite:///{tmp_path / 'b.db'}?timeout=5", 5.0),
    ):
        made = engine(url)
        with made.connect() as connection:
            busy_ms = connection.exec_driver_sql("PRAGMA busy_timeout").scalar()
        made.dispose()
        assert busy_ms == waits * 1000


def test_a_new_database_waits_for_another_connections_write_to_switch_to_wal(
    tmp_path: Path,
) -> None:
    """Switching a new database to WAL needs its exclusive lock, which SQLite refuses at once
    (no busy wait) while another connection, still in the old journal, holds a write: two
    supervisors starting on one new database failed each other with "database is locked".
    The switch now waits for the write (committed 0.3 s after our connect began)."""
    path = tmp_path / "new.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN")
    holder.execute("CREATE TABLE made_first (x)")
    later = threading.Timer(0.3, holder.execute, ["COMMIT"])
    later.start()
    try:
        with engine(f"sqlite:///{path}").connect() as connection:
            assert pragmas(connection) == ("wal", NORMAL)
            assert connection.exec_driver_sql("SELECT count(*) FROM made_first").scalar() == 0
    finally:
        later.join()
        holder.close()


def test_the_wal_switch_gives_up_on_other_errors(tmp_path: Path) -> None:
    """Only a lock is waited for: any other error is the caller's at once."""

    class Refusing:
        def execute(self, sql: str) -> None:
            raise sqlite3.OperationalError("disk I/O error")

    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        _switch_to_wal(Refusing())
