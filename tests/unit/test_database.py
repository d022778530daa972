"""Database engines (boardstream/database.py): the embedded SQLite default runs in write-ahead
logging with synchronous=NORMAL on every connection (so reconciliation can read while the sink
writes), and other databases get no SQLite pragmas. SQLite runs in this process on a file
under a temporary directory; a PostgreSQL URL is only parsed, never connected to."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from boardstream.database import _sqlite_pragmas, engine

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
