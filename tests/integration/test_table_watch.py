"""The table as last checked (``reconcile/table_watch.py``) against real SQLite and PostgreSQL:
after a full run remembers every row, an incremental run's suspects are exactly the boards whose
rows changed since (altered, deleted, added), every board of a bucket that gained a duplicate,
and every board when a column's type changed; what a run remembers after re-checking boards
is what the next run compares with; a table larger than a run's slice is watched a slice per
run, each change found by the run whose slice holds it."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from boardstream import database
from boardstream.reconcile.checks import table_checks
from boardstream.reconcile.incremental import table_buckets, table_watch
from boardstream.sink import table as sink_table
from tests.fixtures import sqlite_or_postgres_url
from tests.integration.test_table_buckets import ROWS, board, make_row
from tests.store import WATCH


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request, tmp_path) -> Iterator[Engine]:
    created = database.engine(sqlite_or_postgres_url(request, tmp_path))
    sink_table.create(created)
    WATCH.create(created)
    assert sink_table.upsert(created, [make_row(i) for i in range(ROWS)]) == ROWS
    staged = WATCH.stage_all(created, sink_table.BOARD_DETAIL)
    with created.begin() as connection:
        WATCH.remember_all(connection, sink_table.BOARD_DETAIL, staged)
    yield created
    created.dispose()


def suspects(engine: Engine) -> set[str]:
    with engine.connect() as connection:
        return WATCH.suspects(connection, sink_table.BOARD_DETAIL)


def execute(engine: Engine, *statements: str) -> None:
    with engine.begin() as connection:
        for statement in statements:
            connection.execute(sa.text(statement))


def rebuilt_without_key(engine: Engine) -> None:
    """``board_detail`` copied into a table without its primary key (SQLite cannot drop one),
    which takes duplicate rows and rows without a board id; remembered whole, as a full run
    would."""
    execute(
        engine,
        "CREATE TABLE copy AS SELECT * FROM board_detail",
        "DROP TABLE board_detail",
        "ALTER TABLE copy RENAME TO board_detail",
    )
    staged = WATCH.stage_all(engine, sink_table.BOARD_DETAIL)
    with engine.begin() as connection:
        WATCH.remember_all(connection, sink_table.BOARD_DETAIL, staged)


def test_an_untouched_table_has_no_suspects(engine: Engine) -> None:
    assert suspects(engine) == set()


def test_altered_deleted_and_added_rows_are_exactly_the_suspects(engine: Engine) -> None:
    execute(
        engine,
        f"UPDATE board_detail SET city = 'x' WHERE board_id = '{board(3)}'",
        f"DELETE FROM board_detail WHERE board_id = '{board(4)}'",
    )
    sink_table.upsert(engine, [{**make_row(ROWS), "board_id": "forged"}])
    assert suspects(engine) == {board(3), board(4), "forged"}


def test_digests_taken_beforehand_find_earlier_changes_and_leave_later_ones_to_the_next_run(
    engine: Engine,
) -> None:
    """An incremental run computes the bucket digests on a connection of its own while Spark
    reads (``actual``): a change made before them is found; one made after them is not found
    by this run, but stays a suspect for the next, as the remembered digests did not move."""
    execute(engine, f"UPDATE board_detail SET city = 'early' WHERE board_id = '{board(2)}'")
    seen = WATCH.look(engine, sink_table.BOARD_DETAIL, ROWS)
    assert seen.within == table_buckets.WHOLE
    execute(engine, f"UPDATE board_detail SET city = 'late' WHERE board_id = '{board(7)}'")
    with engine.connect() as connection:
        assert WATCH.suspects(connection, sink_table.BOARD_DETAIL, (), seen) == {board(2)}
    with engine.begin() as connection:
        WATCH.remember(connection, sink_table.BOARD_DETAIL, {board(2)})
    assert suspects(engine) == {board(7)}


def test_remembering_the_re_checked_boards_clears_them(engine: Engine) -> None:
    execute(engine, f"UPDATE board_detail SET title = 'y' WHERE board_id = '{board(5)}'")
    sink_table.upsert(engine, [{**make_row(ROWS), "board_id": "new"}])
    with engine.begin() as connection:
        WATCH.remember(connection, sink_table.BOARD_DETAIL, {board(5), "new"})
    assert suspects(engine) == set()
    execute(engine, "DELETE FROM board_detail WHERE board_id = 'new'")
    assert suspects(engine) == {"new"}
    with engine.begin() as connection:
        WATCH.remember(
            connection, sink_table.BOARD_DETAIL, {"new"}
        )  # gone: forgotten, its bucket's totals moved
    assert suspects(engine) == set()


def test_a_duplicated_row_makes_its_whole_bucket_suspect(engine: Engine) -> None:
    """A copy of a row leaves its board's digest as it was: the bucket's row count tells, and
    every board sharing the bucket is re-checked (the victim is one that shares its bucket)."""
    buckets: dict[int, set[str]] = {}
    for i in range(ROWS):
        buckets.setdefault(table_buckets.bucket_of(board(i)), set()).add(board(i))
    neighbours = next(boards for _, boards in sorted(buckets.items()) if len(boards) > 1)
    victim = min(neighbours)
    rebuilt_without_key(engine)
    assert suspects(engine) == set()
    copy = f"INSERT INTO board_detail SELECT * FROM board_detail WHERE board_id = '{victim}'"
    execute(engine, copy)
    assert suspects(engine) == neighbours


def test_a_changed_schema_makes_every_board_suspect(engine: Engine) -> None:
    """PostgreSQL: bigint to numeric leaves every row's text, so its digest, as it was. SQLite
    cannot change a type in place: a column added is a change of schema too."""
    if engine.dialect.name == "postgresql":
        execute(engine, "ALTER TABLE board_detail ALTER COLUMN created_ts TYPE numeric")
    else:
        execute(engine, "ALTER TABLE board_detail ADD COLUMN note TEXT")
    assert suspects(engine) == {board(i) for i in range(ROWS)}


def test_rows_of_boards_re_checked_anyway_are_not_suspects(engine: Engine) -> None:
    """The sink rewrote ``board(5)``'s row for a new record: the run re-checks that board
    anyway, so its change alone makes no bucket differ; a tampered neighbour still does."""
    execute(engine, f"UPDATE board_detail SET title = 'newer' WHERE board_id = '{board(5)}'")
    sink_table.upsert(engine, [{**make_row(ROWS), "board_id": "new"}])
    with engine.connect() as connection:
        assert WATCH.suspects(connection, sink_table.BOARD_DETAIL, {board(5), "new"}) == set()
    execute(engine, f"DELETE FROM board_detail WHERE board_id = '{board(6)}'")
    with engine.connect() as connection:
        assert WATCH.suspects(connection, sink_table.BOARD_DETAIL, {board(5), "new"}) == {board(6)}


def watch_once(engine: Engine, rows: int, known: set[str] = frozenset()) -> tuple[set[str], int]:
    """One incremental run's watch with slices of ``rows`` rows: its suspects, remembered as
    re-checked, and how many rows its slice held."""
    seen = WATCH.look(engine, sink_table.BOARD_DETAIL, rows)
    with engine.begin() as connection:
        found = WATCH.suspects(connection, sink_table.BOARD_DETAIL, known, seen)
        WATCH.remember(connection, sink_table.BOARD_DETAIL, found | known)
        WATCH.advance(connection, seen.within)
    return found, seen.rows


def test_a_table_larger_than_a_slice_is_watched_one_slice_per_run(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    """300 rows in slices of 70: five runs make a round (70, 70, 70, 70, then the last 20 and
    whatever came after), each finding exactly the changes in its own slice (an alteration at
    the first id, a deletion in the third slice, an addition past the last id, an alteration at
    the last), none twice; a board the run re-checks anyway is no suspect, in its slice or not;
    the sixth run starts over from the first id and finds nothing. Each run drills into just the
    buckets of what it finds: a slice's expected digests are the slice's own."""
    with engine.connect() as connection:
        ids = list(
            connection.execute(
                sa.text("SELECT board_id FROM board_detail ORDER BY board_id")
            ).scalars()
        )
    first, deleted, last = ids[0], ids[150], ids[-1]
    execute(
        engine,
        f"UPDATE board_detail SET title = 'x' WHERE board_id = '{first}'",
        f"DELETE FROM board_detail WHERE board_id = '{deleted}'",
        f"UPDATE board_detail SET city = 'x' WHERE board_id = '{last}'",
        f"UPDATE board_detail SET title = 'sink' WHERE board_id IN ('{ids[1]}', '{ids[200]}')",
    )
    sink_table.upsert(engine, [{**make_row(ROWS), "board_id": "~forged"}])  # sorts last
    caplog.set_level(logging.INFO, logger=table_watch.__name__)
    runs, drilled = [], []
    for i in range(6):
        caplog.clear()
        runs.append(watch_once(engine, 70, {ids[1], ids[200]} if i == 0 else set()))
        drilled.append([int(r.args[1]) for r in caplog.records if "buckets differ" in r.msg])
    assert runs == [
        ({first}, 70),
        (set(), 70),
        ({deleted}, 70),
        (set(), 70),
        ({last, "~forged"}, 20),
        (set(), 70),
    ]
    assert drilled == [
        [len({table_buckets.bucket_of(board_id) for board_id in found})] if found else []
        for found, _ in runs
    ]


@pytest.mark.parametrize("bounds", ["after", "through", "both"])
def test_a_slices_expected_digests_walk_its_range_not_every_remembered_row(
    tmp_path, bounds: str
) -> None:
    """The remembered totals of a slice (``_expected``) are read through the primary key's
    range, whatever the table's size: the row-without-a-board-id condition ORed into the range
    made SQLite walk every remembered row through the bucket index when the range had an open
    end (0.62-0.66 s at 529,056 rows; 11.1 s of a 21.3 s run at 10x, its pages not in memory)
    instead of the slice's."""
    created = database.engine(f"sqlite:///{tmp_path / 'watch.db'}")
    sink_table.create(created)
    WATCH.create(created)
    sink_table.upsert(created, [make_row(i) for i in range(2_000)])
    staged = WATCH.stage_all(created, sink_table.BOARD_DETAIL)
    with created.begin() as connection:
        WATCH.remember_all(
            connection, sink_table.BOARD_DETAIL, staged
        )  # bulk loaded, then analysed
        connection.execute(  # a row without a board id, remembered: in every slice, once
            WATCH.row_table.insert().values(
                board_id=table_checks.NULL_BOARD_ID, bucket=0, rows=1, high=0, low=0
            )
        )
        ids = list(
            connection.execute(
                sa.text("SELECT board_id FROM board_detail_reconcile_row ORDER BY board_id")
            ).scalars()
        )
    after = ids[1_900] if bounds != "through" else None
    through = ids[1_950] if bounds != "after" else None
    issued: list[tuple[str, tuple]] = []

    def capture(conn, cursor, statement, parameters, context, executemany) -> None:
        issued.append((statement, parameters))

    try:
        with created.connect() as connection:
            sa.event.listen(connection, "before_cursor_execute", capture)
            expected = WATCH._expected(connection, table_watch.IdRange(after, through))
            sa.event.remove(connection, "before_cursor_execute", capture)
            [(statement, parameters)] = issued
            plan = [
                row[-1]
                for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            ]
        assert ids[1_950] > table_checks.NULL_BOARD_ID  # "through" ranges hold it
        in_range = [table_checks.NULL_BOARD_ID] + [
            i
            for i in ids
            if i != table_checks.NULL_BOARD_ID
            and (after is None or i > after)
            and (through is None or i <= through)
        ]
        assert sum(d.rows for d in expected.values()) == len(in_range)
        assert [step for step in plan if "board_detail_reconcile_row" in step] == [
            "SEARCH board_detail_reconcile_row USING PRIMARY KEY (board_id=?)",
            {
                "after": "SEARCH board_detail_reconcile_row USING PRIMARY KEY (board_id>?)",
                "through": "SEARCH board_detail_reconcile_row USING PRIMARY KEY (board_id<?)",
                "both": (
                    "SEARCH board_detail_reconcile_row USING PRIMARY KEY "
                    "(board_id>? AND board_id<?)"
                ),
            }[bounds],
        ]
    finally:
        created.dispose()


def test_a_look_says_which_ids_its_slice_spanned(engine: Engine) -> None:
    """What a run records of its slice (``Look.as_json``, the run's ``table_slice``): the ids
    it spanned and its rows; a table no larger than a slice is looked at whole."""
    with engine.connect() as connection:
        ids = list(
            connection.execute(
                sa.text("SELECT board_id FROM board_detail ORDER BY board_id")
            ).scalars()
        )
    assert WATCH.look(engine, sink_table.BOARD_DETAIL, 300).as_json() == {
        "table": "board_detail",
        "after": None,
        "through": None,
        "rows": 300,
    }
    records = []
    for _ in range(3):
        seen = WATCH.look(engine, sink_table.BOARD_DETAIL, 200)
        with engine.begin() as connection:
            WATCH.advance(connection, seen.within)
        records.append(seen.as_json())
    named = {"table": "board_detail"}
    assert records == [
        {**named, "after": None, "through": ids[199], "rows": 200},
        {**named, "after": ids[199], "through": None, "rows": 100},
        {**named, "after": None, "through": ids[199], "rows": 200},
    ]


def test_every_slice_holds_the_rows_without_a_board_id(engine: Engine) -> None:
    """A table rebuilt without its key takes a row without a board id: such a row is in no
    range of ids, so every slice holds it: the first run after its arrival finds it wherever the
    round is, and so does every run after (a run remembers rows by board id) until it is gone."""
    rebuilt_without_key(engine)
    assert watch_once(engine, 100) == (set(), 100)
    columns = [c.name for c in sink_table.board_detail.columns]
    execute(
        engine,
        f"INSERT INTO board_detail ({', '.join(columns)}) SELECT NULL, "
        f"{', '.join(columns[1:])} FROM board_detail WHERE board_id = '{board(3)}'",
    )
    assert watch_once(engine, 100) == ({table_checks.NULL_BOARD_ID}, 101)
    assert watch_once(engine, 100) == ({table_checks.NULL_BOARD_ID}, 101)
    execute(engine, "DELETE FROM board_detail WHERE board_id IS NULL")
    assert watch_once(engine, 100) == (set(), 100)


def test_a_row_added_behind_the_round_is_found_when_the_round_comes_back(engine: Engine) -> None:
    """A forged row whose id sorts before every other, added once the round has moved past the
    first ids, is in no slice until the round starts over: then the first slice finds it."""
    assert watch_once(engine, 100) == (set(), 100)
    sink_table.upsert(engine, [{**make_row(ROWS), "board_id": "!forged"}])  # sorts first
    assert [watch_once(engine, 100) for _ in range(3)] == [
        (set(), 100),
        (set(), 100),
        ({"!forged"}, 100),
    ]


def test_remembered_rows_of_a_rowid_table_move_into_board_id_order(tmp_path) -> None:
    """A SQLite database made before the remembered rows were stored in board id order keeps a
    rowid table, where a slice's range of ids is one page read per row (and a one-sided range
    was planned through the bucket index: 8 s at 4.47 M rows, 0.17 s in id order). Creating the
    tables moves its rows over, all of them, once, and the watch goes on from them."""
    engine = database.engine(f"sqlite:///{tmp_path / 'old.db'}")
    sink_table.create(engine)
    assert sink_table.upsert(engine, [make_row(i) for i in range(ROWS)]) == ROWS
    execute(  # board_detail_reconcile_row as it was made before
        engine,
        "CREATE TABLE board_detail_reconcile_row (board_id TEXT NOT NULL, bucket INTEGER NOT NULL, "
        "rows BIGINT NOT NULL, high BIGINT NOT NULL, low BIGINT NOT NULL, PRIMARY KEY (board_id))",
        "CREATE INDEX ix_board_detail_reconcile_row_bucket ON board_detail_reconcile_row (bucket)",
    )
    WATCH.metadata.create_all(engine)  # the other tables, beside the old board_detail_reconcile_row
    staged = WATCH.stage_all(engine, sink_table.BOARD_DETAIL)
    with engine.begin() as connection:
        WATCH.remember_all(connection, sink_table.BOARD_DETAIL, staged)
        remembered = connection.execute(sa.text("SELECT * FROM board_detail_reconcile_row")).all()
    assert "WITHOUT ROWID" not in ddl(engine, "board_detail_reconcile_row")

    WATCH.create(engine)
    WATCH.create(engine)  # again: nothing left to move
    assert "WITHOUT ROWID" in ddl(engine, "board_detail_reconcile_row")
    with engine.connect() as connection:
        moved = connection.execute(sa.text("SELECT * FROM board_detail_reconcile_row")).all()
        assert sorted(moved) == sorted(remembered) and len(moved) == ROWS
        indexes = connection.exec_driver_sql("PRAGMA index_list(board_detail_reconcile_row)").all()
        assert {row[1] for row in indexes} >= {"ix_board_detail_reconcile_row_bucket"}
    assert suspects(engine) == set()
    execute(engine, f"DELETE FROM board_detail WHERE board_id = '{board(7)}'")
    assert suspects(engine) == {board(7)}


def ddl(engine: Engine, table: str) -> str:
    with engine.connect() as connection:
        return connection.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE name = ?", (table,)
        ).scalar()
