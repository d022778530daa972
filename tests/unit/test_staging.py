"""Staged writes (boardstream/staging.py): rows committed ahead a batch per transaction, so other
writers of a SQLite file get its one write lock between batches, then moved in by one fenced
transaction, which drops what was staged and any staged copy left behind. SQLite files under a
temporary directory, in this process."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa

from boardstream import staging
from boardstream.database import engine
from tests.store import FACTS, LEDGER


@pytest.fixture
def db(tmp_path: Path):
    created = engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    FACTS.create(created)
    LEDGER.create(created)
    yield created
    created.dispose()


def facts(n: int, first: int = 0) -> pa.Table:
    return pa.table(
        {
            "kind": ["joined"] * n,
            "partition": pa.array([0] * n, pa.int32()),
            "offset": pa.array(range(first, first + n), pa.int64()),
            "board_id": [f"b{i}" for i in range(first, first + n)],
            "detail": pa.nulls(n, pa.string()),
        }
    )


def sources(offsets: range, digest: int) -> pa.Table:
    return pa.table(
        {
            "board_id": [f"b{o}" for o in offsets],
            "source_partition": pa.array([0] * len(offsets), pa.int32()),
            "source_offset": pa.array(offsets, pa.int64()),
            "board_digest": pa.array([digest] * len(offsets), pa.int64()),
        }
    )


def tables(db: sa.Engine) -> list[str]:
    return sorted(sa.inspect(db).get_table_names())


def test_other_writers_get_the_lock_between_staged_batches(db, tmp_path, monkeypatch) -> None:
    """At the start of every staging transaction a writer on its own connection, which does
    not wait at all, takes SQLite's write lock and commits: the lock is not held across
    batches. Staged in one transaction, it would find the lock held from the second batch."""
    monkeypatch.setattr(staging, "BATCH", 10)
    other = sqlite3.connect(tmp_path / "db.sqlite", timeout=0, isolation_level=None)
    other.execute("CREATE TABLE other_writer (n INTEGER)")
    written: list[int] = []

    def write_beside(_connection) -> None:
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO other_writer VALUES (1)")
        other.execute("COMMIT")
        written.append(1)

    sa.event.listen(db, "begin", write_beside)
    try:
        staged = staging.stage(db, FACTS.fact_table, facts(35))
    finally:
        sa.event.remove(db, "begin", write_beside)
    assert len(written) >= 4  # a transaction per batch of 10 (and the staged table's create)
    with db.connect() as connection:
        assert connection.execute(sa.select(sa.func.count()).select_from(staged)).scalar() == 35
    other.close()


def test_a_replacing_move_leaves_only_the_staged_rows_and_statistics(db) -> None:
    """A table loaded by a replacing move is analysed: a lookup of boards among facts keyed
    mostly by position must use the board index. Without statistics SQLite takes the
    ``partition IS NULL`` equality on the position index as selective and scans every board
    fact (what made an incremental run's fact deletes take seconds)."""
    n = 2_000
    by_board = facts(n).set_column(1, "partition", pa.nulls(n, pa.int32()))
    by_board = by_board.set_column(2, "offset", pa.nulls(n, pa.int64()))
    by_board = by_board.set_column(0, "kind", pa.array(["expected_table_rows"] * n))
    with db.begin() as connection:
        FACTS._insert(connection, facts(5, first=10_000))  # replaced by the move
    staged = staging.stage(db, FACTS.fact_table, pa.concat_tables([facts(n), by_board]))
    f = FACTS.fact_table.c
    lookup = sa.select(f.kind).where(f.partition.is_(None), f.board_id.in_(["b1", "b2"]))
    with db.begin() as connection:
        staging.move_in(connection, staged, FACTS.fact_table, replace=True)
        compiled = lookup.compile(connection, compile_kwargs={"literal_binds": True})
        plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}").all()
        offsets = connection.execute(sa.select(sa.func.max(f.offset), sa.func.count())).one()
    assert [row[-1] for row in plan] == [
        "SEARCH board_detail_reconcile_fact USING INDEX board_detail_reconcile_fact_board "
        "(board_id=?)"
    ]
    assert tuple(offsets) == (n - 1, 2 * n)
    assert staged.name not in tables(db)


def test_a_skipping_move_keeps_present_rows_and_drops_what_was_left_behind(db) -> None:
    """A row whose key is present stays as it was (a replayed ledger write); a staged copy of
    the same table that no transaction moved in (its run died or was fenced) goes with the
    next move; a staged copy of another table stays."""
    with db.begin() as connection:
        LEDGER.append(connection, LEDGER.source_table, sources(range(0, 3), digest=1))
    left_behind = LEDGER.stage(db, LEDGER.source_table, sources(range(100, 103), 9))
    other_table = staging.stage(db, FACTS.fact_table, facts(2))
    staged = LEDGER.stage(db, LEDGER.source_table, sources(range(2, 5), digest=2))
    with db.begin() as connection:
        LEDGER.append_staged(connection, staged, LEDGER.source_table)
        s = LEDGER.source_table.c
        rows = connection.execute(
            sa.select(s.source_offset, s.board_digest).order_by(s.source_offset)
        ).all()
    assert rows == [(0, 1), (1, 1), (2, 1), (3, 2), (4, 2)]
    assert {staged.name, left_behind.name} & set(tables(db)) == set()
    assert other_table.name in tables(db)


def test_a_move_that_rolls_back_leaves_the_table_and_the_staged_rows(db) -> None:
    """A fenced transaction (its run lost the lease) writes nothing: the rows it moved and the
    staged table it dropped come back with the rollback, for the next move to drop."""
    staged = staging.stage(db, FACTS.fact_table, facts(3))
    with pytest.raises(RuntimeError, match="fenced"), db.begin() as connection:
        staging.move_in(connection, staged, FACTS.fact_table, replace=True)
        raise RuntimeError("fenced")
    with db.connect() as connection:
        count = sa.select(sa.func.count()).select_from(FACTS.fact_table)
        assert connection.execute(count).scalar() == 0
    assert staged.name in tables(db)


def test_a_staged_null_in_a_not_null_column_is_refused_not_skipped(db) -> None:
    """The staged table has no constraints; the move meets the target's: a missing kind is
    an error, never a row silently left out."""
    rows = facts(2).set_column(0, "kind", pa.array([None, "joined"], pa.string()))
    staged = staging.stage(db, FACTS.fact_table, rows)
    with pytest.raises(sa.exc.IntegrityError, match="NOT NULL"), db.begin() as connection:
        staging.move_in(connection, staged, FACTS.fact_table, skip_present=True)
