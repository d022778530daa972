"""SQLite's bucket digests folded in a process of their own: the same digests as in this
process, only for an Engine over a file (a Connection's transaction is its caller's), and every
failure of that process loud."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from boardstream import database
from boardstream.reconcile.incremental import sqlite_digests
from boardstream.reconcile.incremental import table_buckets as tb
from boardstream.sink import table as sink_table
from tests.integration.test_table_buckets import BUCKETS, ROWS, board, make_row


@pytest.fixture
def folds(monkeypatch) -> list[str]:
    """The database files folded apart, through the real :func:`sqlite_digests.fold_apart`."""
    paths: list[str] = []
    real = sqlite_digests.fold_apart

    def spy(path: str, *args: object) -> str | None:
        paths.append(path)
        return real(path, *args)

    monkeypatch.setattr(sqlite_digests, "fold_apart", spy)
    return paths


def filled(path: Path) -> sa.Engine:
    engine = database.engine(f"sqlite:///{path}")
    sink_table.create(engine)
    rows = [make_row(i) for i in range(ROWS)] + [{**make_row(ROWS), "board_id": "게시판 ☃"}]
    sink_table.upsert(engine, rows)
    return engine


def test_an_engine_over_a_file_folds_apart_with_the_same_digests(tmp_path, folds) -> None:
    engine = filled(tmp_path / "t.db")
    apart = tb.bucket_digests(engine, sink_table.BOARD_DETAIL, BUCKETS)
    assert folds == [str(tmp_path / "t.db")]
    with engine.connect() as connection:
        here = tb.bucket_digests(connection, sink_table.BOARD_DETAIL, BUCKETS)
    assert folds == [str(tmp_path / "t.db")]  # a Connection: in this process
    assert (
        apart == here == tb.totals(tb.every_row(engine, sink_table.BOARD_DETAIL, BUCKETS).values())
    )
    assert sum(d.rows for d in apart.values()) == ROWS + 1
    within = tb.IdRange(board(10), board(99))
    assert tb.bucket_digests(engine, sink_table.BOARD_DETAIL, BUCKETS, within) == tb.totals(
        tb.row_digests(
            engine, sink_table.BOARD_DETAIL, [board(i) for i in range(11, 100)], BUCKETS
        ).values()
    )
    assert len(folds) == 2


def test_a_connections_uncommitted_write_is_in_its_digests_not_the_engines(tmp_path) -> None:
    """The fold apart reads committed rows; a caller's transaction keeps its own view."""
    engine = filled(tmp_path / "t.db")
    was = tb.bucket_digests(engine, sink_table.BOARD_DETAIL, BUCKETS)
    table = sink_table.board_detail
    with engine.connect() as connection, connection.begin() as transaction:
        connection.execute(table.update().where(table.c.board_id == board(7)).values(title="x"))
        assert tb.differing_buckets(
            was, tb.bucket_digests(connection, sink_table.BOARD_DETAIL, BUCKETS)
        ) == [tb.bucket_of(board(7), BUCKETS)]
        assert tb.bucket_digests(engine, sink_table.BOARD_DETAIL, BUCKETS) == was
        transaction.rollback()


@pytest.mark.parametrize(
    "url", ["sqlite://", "sqlite:///:memory:", "sqlite:///{tmp}/t.db?mode=ro&uri=true"]
)
def test_a_database_another_process_cannot_open_alike_is_folded_here(url, tmp_path) -> None:
    assert tb._file_of(sa.create_engine(url.format(tmp=tmp_path))) is None


def test_sqlites_refusal_in_the_process_is_raised_as_sqlites(tmp_path) -> None:
    sqlite3.connect(tmp_path / "empty.db").close()
    with pytest.raises(sqlite3.OperationalError, match="no such table: board_detail"):
        sqlite_digests.fold_apart(
            str(tmp_path / "empty.db"), "SELECT count(*) FROM board_detail", {}, BUCKETS
        )


def test_any_other_failure_of_the_process_is_raised_with_its_error_output(tmp_path) -> None:
    sqlite3.connect(tmp_path / "empty.db").close()
    with pytest.raises(
        RuntimeError, match=r"(?s)exited with 1: .*ProgrammingError: Incorrect number of bindings"
    ):
        sqlite_digests.fold_apart(str(tmp_path / "empty.db"), "SELECT 1", [1], BUCKETS)  # type: ignore[arg-type]
