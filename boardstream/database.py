"""SQLAlchemy engines for boardstream's database, PostgreSQL or the embedded SQLite default."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect, Engine

from boardstream.errors import BoardstreamError


def engine(url: str) -> Engine:
    """An engine for ``url``. SQLite gets write-ahead logging, so reconciliation can read while
    the sink writes, and synchronous=NORMAL, which in WAL mode still survives a process crash
    (only an OS crash may lose the last commits, and the sink replays those from Kafka)."""
    created = sa.create_engine(url, pool_pre_ping=True)
    if created.dialect.name == "sqlite":
        sa.event.listen(created, "connect", _sqlite_pragmas)
    return created


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


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
