"""A pipeline's sink table and its idempotent upsert (PostgreSQL and SQLite); ``board_detail``
the shipped pipeline's.

Each row keeps the stream position of the version it holds and the joined record's position
it was loaded from. A key's versions can reach the joined topic out of the stream's order (the
join is keyed by the table's key: a version waiting for its absent row is written after a
later one joined at once), so a row is replaced only by a version at least as new in the stream
(:attr:`SinkTable.newest_order`), whatever order the outputs arrive in. A replayed record (the
Kafka sink and this loader are at-least-once) overwrites its row with the same values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from boardstream import database, key_order
from boardstream.errors import BoardstreamError
from boardstream.pipelines import LOADED_AT, POSITIONS, Pipeline, shipped
from boardstream.sink.ddl import kept_column, key_column, sink_table


@dataclass(frozen=True)
class SinkTable:
    """A pipeline's sink table (:func:`~boardstream.sink.ddl.sink_table`), its key column and
    the order of a key's versions."""

    table: sa.Table
    key: str
    # A key's versions, oldest first: by their position in the stream, then (copies of one
    # version, replays) by the joined record's. A NULL (no record the join writes has one)
    # orders as -1. Partitions before offsets: a key normally stays in one partition; one that
    # moved partition has no order in the source, and this one is only a tie-break every
    # reader shares (the reconciliation names such a key: docs/RECONCILIATION.md). The
    # reconciliation's "newest" is this order (reconcile.checks.table_checks).
    newest_order: tuple[str, ...]

    @classmethod
    def of(cls, pipeline: Pipeline) -> SinkTable:
        newest = tuple(
            kept_column(pipeline, f"{side}.{position}")
            for side in ("stream", "joined")
            for position in POSITIONS
        )
        return cls(sink_table(pipeline), key_column(pipeline), newest)

    @property
    def columns(self) -> list[str]:
        """The columns a row gives: all but the load time, which the table sets."""
        return [c.name for c in self.table.columns if c.name != LOADED_AT]

    def create(self, engine: Engine) -> None:
        """Create the table; on SQLite, refuse a decimal it would round
        (:func:`refuse_what_sqlite_would_alter`) and move a table made before it was stored in
        key order into that order (once)."""
        if engine.dialect.name == "sqlite":
            refuse_what_sqlite_would_alter(self.table)
        key_order.move_into_key_order(engine, self.table)
        self.table.create(engine, checkfirst=True)

    def newest_key(self, row: Mapping[str, Any]) -> tuple[int, ...]:
        """``row``'s place among its key's versions (:attr:`newest_order`)."""
        return tuple(-1 if row[name] is None else row[name] for name in self.newest_order)

    def latest_per_key(self, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """One row per key, its newest (:attr:`newest_order`). A multi-row upsert may not
        touch a key twice, and a batch can hold two versions of a key or a replayed copy."""
        latest: dict[Any, dict[str, Any]] = {}
        for row in rows:
            seen = latest.get(row[self.key])
            if seen is None or self.newest_key(row) >= self.newest_key(seen):
                latest[row[self.key]] = row
        return list(latest.values())

    def _newest_order(self, columns: Any) -> sa.Tuple:
        """:attr:`newest_order` of ``columns`` (the table's or ``excluded``) as one SQL row
        value, compared lexicographically (PostgreSQL, SQLite from 3.15), NULLs as
        :meth:`newest_key`."""
        return sa.tuple_(*(sa.func.coalesce(columns[name], -1) for name in self.newest_order))

    def upsert(
        self,
        engine: Engine,
        rows: list[dict[str, Any]],
        chunk: int = 5_000,
        fence: Callable[[Connection], None] | None = None,
    ) -> int:
        """Insert or update ``rows`` in one transaction, in key order: on SQLite the table is
        stored in that order, and a batch written in it touches each page once rather than once
        a row (a sink batch in arrival order cost about 30 % more); returns how many were
        written. ``fence`` runs first in the transaction, and raises to keep it from
        committing (a driver that lost its checkpoint's lease)."""
        rows = sorted(self.latest_per_key(rows), key=lambda row: row[self.key])
        if not rows:
            return 0
        table = self.table
        statement = database.upsert_insert(engine.dialect, table, f"{table.name} upserts")
        excluded = statement.excluded
        statement = statement.on_conflict_do_update(
            index_elements=[table.c[self.key]],
            set_={name: excluded[name] for name in self.columns if name != self.key}
            | {LOADED_AT: sa.func.now()},
            # Not over a newer version: an older one arriving later is skipped (``superseded``).
            where=self._newest_order(excluded) >= self._newest_order(table.c),
        )
        with engine.begin() as connection:
            if fence is not None:
                fence(connection)
            for start in range(0, len(rows), chunk):
                connection.execute(statement, rows[start : start + chunk])
        return len(rows)


# Significant digits SQLite keeps of a NUMERIC value: it stores one as a REAL (an IEEE double)
# whenever the first 15 digits survive the conversion, so a longer one would come back altered.
SQLITE_DECIMAL_DIGITS = 15


def refuse_what_sqlite_would_alter(table: sa.Table) -> None:
    """A decimal column wider than SQLite keeps exactly is refused, naming it, rather than
    stored rounded."""
    for column in table.columns:
        kind = column.type
        if isinstance(kind, sa.Numeric) and (kind.precision or 0) > SQLITE_DECIMAL_DIGITS:
            raise BoardstreamError(
                f"{table.name}.{column.name} is decimal({kind.precision},{kind.scale}): SQLite "
                f"keeps {SQLITE_DECIMAL_DIGITS} significant digits of a decimal and would round "
                "the rest; use PostgreSQL (BOARDSTREAM_DATABASE_URL) or a precision of at most "
                f"{SQLITE_DECIMAL_DIGITS}"
            )


# The shipped pipeline's table, under the names its callers use.
BOARD_DETAIL = SinkTable.of(shipped("board_detail"))
board_detail = BOARD_DETAIL.table
COLUMNS = BOARD_DETAIL.columns
NEWEST_ORDER = BOARD_DETAIL.newest_order
create = BOARD_DETAIL.create
newest_key = BOARD_DETAIL.newest_key
latest_per_board = BOARD_DETAIL.latest_per_key
upsert = BOARD_DETAIL.upsert
