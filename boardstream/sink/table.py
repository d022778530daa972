"""The ``board_detail`` table and its idempotent upsert (PostgreSQL and SQLite).

Each row keeps the ``board`` position of the version it holds and the ``board-detail`` position
it was loaded from. A board's versions can reach ``board-detail`` out of the source's order (the
join is keyed by member: a version waiting for its absent member is written after a later one
joined at once), so a row is replaced only by a version at least as new in ``board``
(:data:`NEWEST_ORDER`), whatever order the outputs arrive in. A replayed record (the Kafka sink
and this loader are at-least-once) overwrites its row with the same values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from boardstream import database, key_order
from boardstream.joins.schema import BOARD_ID_MAX_CHARS

metadata = sa.MetaData()

board_detail = sa.Table(
    "board_detail",
    metadata,
    # Sized by the join's contract: an id the join accepts is one this column holds.
    sa.Column("board_id", sa.String(BOARD_ID_MAX_CHARS), primary_key=True),
    sa.Column("member_id", sa.BigInteger, nullable=False, index=True),
    sa.Column("nickname", sa.Text),
    sa.Column("city", sa.Text),
    sa.Column("phone", sa.Text),
    sa.Column("title", sa.Text),
    sa.Column("body", sa.Text),
    sa.Column("created_ts", sa.BigInteger),
    sa.Column("created_at", sa.Text),
    sa.Column("modified_at", sa.Text),
    sa.Column("member_modified_at", sa.Text),
    sa.Column("board_partition", sa.Integer),
    sa.Column("board_offset", sa.BigInteger),
    sa.Column("member_partition", sa.Integer),
    sa.Column("member_offset", sa.BigInteger),
    sa.Column("detail_partition", sa.Integer, nullable=False),
    sa.Column("detail_offset", sa.BigInteger, nullable=False),
    sa.Column("loaded_at", sa.DateTime(timezone=True), server_default=sa.func.now()),
    # SQLite: stored in board id order, so a range of ids (a table watch's slice) is neighbouring
    # pages rather than one page read per row (boardstream.key_order).
    sqlite_with_rowid=False,
)

COLUMNS = [c.name for c in board_detail.columns if c.name != "loaded_at"]
# A board's versions, oldest first: by their position in ``board``, then (copies of one version,
# replays) by their position in ``board-detail``. A NULL (no record the join writes has one)
# orders as -1. Partitions before offsets: a board id normally stays in one partition (it is the
# key); one that moved partition has no order in the source, and this one is only a tie-break
# every reader shares (the reconciliation names such a board: docs/RECONCILIATION.md). The
# reconciliation's "newest" is this order (reconcile.checks.table_checks).
NEWEST_ORDER = ("board_partition", "board_offset", "detail_partition", "detail_offset")


def create(engine: Engine) -> None:
    """Create the table; on SQLite, move one made before it was stored in board id order into
    that order (once)."""
    key_order.move_into_key_order(engine, board_detail)
    metadata.create_all(engine)


def newest_key(row: Mapping[str, Any]) -> tuple[int, ...]:
    """``row``'s place among its board's versions (:data:`NEWEST_ORDER`)."""
    return tuple(-1 if row[name] is None else row[name] for name in NEWEST_ORDER)


def latest_per_board(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per board_id, its newest (:data:`NEWEST_ORDER`). A multi-row upsert may not
    touch a key twice, and a batch can hold two versions of a board or a replayed copy."""
    latest: dict[str, dict[str, Any]] = {}
    for row in rows:
        seen = latest.get(row["board_id"])
        if seen is None or newest_key(row) >= newest_key(seen):
            latest[row["board_id"]] = row
    return list(latest.values())


def _newest_order(columns: Any) -> sa.Tuple:
    """:data:`NEWEST_ORDER` of ``columns`` (a table's or ``excluded``) as one SQL row value,
    compared lexicographically (PostgreSQL, SQLite from 3.15), NULLs as :func:`newest_key`."""
    return sa.tuple_(*(sa.func.coalesce(columns[name], -1) for name in NEWEST_ORDER))


def upsert(
    engine: Engine,
    rows: list[dict[str, Any]],
    chunk: int = 5_000,
    fence: Callable[[Connection], None] | None = None,
) -> int:
    """Insert or update ``rows`` in one transaction, in board id order: on SQLite the table is
    stored in that order, and a batch written in it touches each page once rather than once a
    row (a sink batch in arrival order cost about 30 % more); returns how many were written.
    ``fence`` runs first in the transaction, and raises to keep it from committing (a driver
    that lost its checkpoint's lease)."""
    rows = sorted(latest_per_board(rows), key=lambda row: row["board_id"])
    if not rows:
        return 0
    statement = database.upsert_insert(engine.dialect, board_detail, "board_detail upserts")
    excluded = statement.excluded
    statement = statement.on_conflict_do_update(
        index_elements=[board_detail.c.board_id],
        set_={name: excluded[name] for name in COLUMNS if name != "board_id"}
        | {"loaded_at": sa.func.now()},
        # Not over a newer version: an older one arriving later is skipped (``superseded``).
        where=_newest_order(excluded) >= _newest_order(board_detail.c),
    )
    with engine.begin() as connection:
        if fence is not None:
            fence(connection)
        for start in range(0, len(rows), chunk):
            connection.execute(statement, rows[start : start + chunk])
    return len(rows)
