"""``board_detail`` stored in board id order on SQLite (``boardstream/key_order.py``), on real
database files: a new table is made so; one made with a rowid by an earlier version moves over
once, every stored value as it was; a table not laid out as the sink makes it (a type, an index,
a view, a trigger of someone else's) is left exactly as it is; a move that fails, or cannot
take the database from a writer, leaves the table as it was, its indexes included."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from boardstream import database, key_order
from boardstream.sink import table as sink_table
from tests.integration.test_table_buckets import board, make_row

ROWS = 200
MEMBER_INDEX = "ix_board_detail_member_id"


@pytest.fixture
def engine(tmp_path) -> Iterator[Engine]:
    created = database.engine(f"sqlite:///{tmp_path / 'boards.db'}")
    yield created
    created.dispose()


def ddl(engine: Engine) -> str:
    with engine.connect() as connection:
        return connection.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'board_detail'"
        ).scalar_one()


def stored(engine: Engine) -> list[tuple[object, ...]]:
    """Every stored value with its SQLite storage class, in board id order: a copy that coerced
    a value (text '007' to integer 7) or re-stamped ``loaded_at`` shows here."""
    columns = [c.name for c in sink_table.board_detail.columns]
    typed = ", ".join(f'"{name}", typeof("{name}")' for name in columns)
    with engine.connect() as connection:
        return connection.exec_driver_sql(
            f"SELECT {typed} FROM board_detail ORDER BY board_id"
        ).all()


def indexes(engine: Engine) -> set[str]:
    with engine.connect() as connection:
        return {row[1] for row in connection.exec_driver_sql("PRAGMA index_list(board_detail)")}


def made_with_a_rowid(
    engine: Engine, *after: str, member_id: sa.types.TypeEngine | None = None
) -> None:
    """``board_detail`` as an earlier version made it (the same table with a rowid; its
    ``member_id`` of another type if given), holding rows loaded in no order of their ids, each
    with a ``loaded_at`` of its own; then ``after``."""
    legacy = key_order.with_rowid(sink_table.board_detail)
    if member_id is not None:
        legacy.c.member_id.type = member_id
    rows = [
        {**make_row(i), "loaded_at": datetime(2026, 11, 1 + i % 28, 10, 0, i % 60)}
        for i in range(ROWS)
    ]
    with engine.begin() as connection:
        legacy.create(connection)
        connection.execute(legacy.insert(), rows[1::2] + rows[::2])
        for statement in after:
            connection.exec_driver_sql(statement)
    assert "WITHOUT ROWID" not in ddl(engine)


def test_a_new_table_is_stored_in_board_id_order(engine: Engine) -> None:
    sink_table.create(engine)
    assert ddl(engine).rstrip().endswith("WITHOUT ROWID")
    assert indexes(engine) == {MEMBER_INDEX, "sqlite_autoindex_board_detail_1"}
    assert sink_table.upsert(engine, [make_row(i) for i in range(ROWS)]) == ROWS
    replayed = {**make_row(5), "city": "moved", "detail_offset": 10_000}
    assert sink_table.upsert(engine, [replayed]) == 1
    rows = {row[0]: row for row in stored(engine)}
    assert len(rows) == ROWS and rows[board(5)][6:8] == ("moved", "text")


def test_a_table_made_with_a_rowid_moves_into_board_id_order_once(engine, caplog) -> None:
    made_with_a_rowid(engine)
    before = stored(engine)
    caplog.set_level(logging.INFO, logger=key_order.__name__)

    sink_table.create(engine)
    assert ddl(engine).rstrip().endswith("WITHOUT ROWID")
    assert stored(engine) == before  # every value, its type and loaded_at as they were
    assert indexes(engine) == {MEMBER_INDEX, "sqlite_autoindex_board_detail_1"}
    assert [r.getMessage() for r in caplog.records] == [
        f"board_detail: moving its {ROWS} rows into key order (once)",
        caplog.records[1].getMessage(),
    ]
    assert caplog.records[1].getMessage().startswith(f"board_detail: {ROWS} rows in key order (")

    caplog.clear()
    assert key_order.move_into_key_order(engine, sink_table.board_detail) is False
    sink_table.create(engine)  # again: nothing to move, nothing said
    assert caplog.records == [] and stored(engine) == before
    with engine.connect() as connection:
        tables = connection.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'table'")
        assert tables.scalars().all() == ["board_detail"]  # no copy left behind


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (  # a copy into the declared BIGINT would store '007' as the integer 7
            [f"UPDATE board_detail SET member_id = '007' WHERE board_id = '{board(3)}'"],
            "its columns, key or indexes are not the ones declared",
        ),
        (
            ["CREATE INDEX by_city ON board_detail (city)"],
            "its columns, key or indexes are not the ones declared",
        ),
        (
            ["CREATE VIEW cities AS SELECT DISTINCT city FROM board_detail"],
            "view cities name it",
        ),
        (
            [
                "CREATE TABLE audit (board_id TEXT)",
                "CREATE TRIGGER audited AFTER UPDATE ON board_detail "
                "BEGIN INSERT INTO audit VALUES (new.board_id); END",
            ],
            "trigger audited name it",
        ),
    ],
    ids=["a-column-type", "an-index", "a-view", "a-trigger"],
)
def test_a_table_not_laid_out_as_the_sink_makes_it_is_left_as_it_is(
    engine, caplog, change: list[str], why: str
) -> None:
    typed = "'007'" in change[0]
    made_with_a_rowid(engine, *change, member_id=sa.Text() if typed else None)
    before, layout = stored(engine), ddl(engine)
    assert (("007", "text") in {row[2:4] for row in before}) is typed
    caplog.set_level(logging.INFO, logger=key_order.__name__)

    sink_table.create(engine)
    assert ddl(engine) == layout and stored(engine) == before
    assert [r.getMessage() for r in caplog.records] == [f"board_detail: left in rowid order: {why}"]


def test_a_move_that_fails_leaves_the_table_as_it_was(engine, caplog) -> None:
    """A view elsewhere that names a missing table makes SQLite refuse the rename, after the
    member index was dropped: the one transaction gives the index back with everything else."""
    made_with_a_rowid(engine, "CREATE VIEW broken AS SELECT * FROM gone")
    before, layout = stored(engine), ddl(engine)
    caplog.set_level(logging.INFO, logger=key_order.__name__)

    sink_table.create(engine)
    assert ddl(engine) == layout and stored(engine) == before
    assert indexes(engine) == {MEMBER_INDEX, "sqlite_autoindex_board_detail_1"}
    warning = caplog.records[-1]
    assert warning.levelno == logging.WARNING
    assert warning.getMessage() == (
        "board_detail: left in rowid order, nothing changed: "
        "error in view broken: no such table: main.gone"
    )


def test_a_writer_holding_the_database_leaves_the_move_to_the_next_start(engine, caplog) -> None:
    """Another process mid-write past the driver's busy timeout: the sink or a reconciliation
    still starts, the table as it was, and a later start moves it."""
    made_with_a_rowid(engine)
    before, layout = stored(engine), ddl(engine)
    caplog.set_level(logging.INFO, logger=key_order.__name__)
    writer = sqlite3.connect(engine.url.database, timeout=0, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        impatient = database.engine(f"{engine.url}?timeout=0.2")
        sink_table.create(impatient)
        impatient.dispose()
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert ddl(engine) == layout and stored(engine) == before
    assert [r.getMessage() for r in caplog.records] == [
        "board_detail: left in rowid order, nothing changed: database is locked"
    ]

    sink_table.create(engine)
    assert ddl(engine).rstrip().endswith("WITHOUT ROWID") and stored(engine) == before


def test_two_starts_at_once_move_the_table_once(engine, caplog) -> None:
    """The sink and a reconciliation starting together both find a rowid table: one moves it,
    the other waits for its transaction, then finds nothing left to move (not a table "not laid
    out as declared")."""
    made_with_a_rowid(engine)
    before = stored(engine)
    caplog.set_level(logging.INFO, logger=key_order.__name__)
    with ThreadPoolExecutor(2) as pool:
        moved = sorted(
            pool.map(
                lambda _: key_order.move_into_key_order(engine, sink_table.board_detail), [1, 2]
            )
        )
    assert moved == [False, True]
    assert ddl(engine).rstrip().endswith("WITHOUT ROWID") and stored(engine) == before
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
        f"board_detail: moving its {ROWS} rows into key order",
        f"board_detail: {ROWS} rows in key order",
    ]
