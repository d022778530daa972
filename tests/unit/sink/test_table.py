"""The ``board_detail`` upsert on a real SQLite database (the project's default): a replayed
record rewrites its row harmlessly, an older version (by its position in ``board``) never
overwrites a newer one of its board whatever their order in ``board-detail``, a batch holding a
board twice writes its newest, and a database other than PostgreSQL or SQLite is refused by
name."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from boardstream import database
from boardstream.errors import BoardstreamError
from boardstream.sink.table import COLUMNS, board_detail, create, latest_per_board, upsert


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    created = database.engine(f"sqlite:///{tmp_path / 'boardstream.db'}")
    create(created)
    return created


def _row(
    board_id: str, partition: int, offset: int, title: str = "t", board: int | None = None
) -> dict[str, Any]:
    """A row loaded from board-detail ``partition``:``offset``, of the version at ``board``
    (its board offset, in partition 0; None: no source position)."""
    return dict.fromkeys(COLUMNS) | {
        "board_id": board_id,
        "member_id": 7,
        "title": title,
        "board_partition": None if board is None else 0,
        "board_offset": board,
        "detail_partition": partition,
        "detail_offset": offset,
    }


def _table(engine: Engine) -> list[tuple[str, str, int, int]]:
    c = board_detail.c
    query = sa.select(c.board_id, c.title, c.detail_partition, c.detail_offset).order_by(c.board_id)
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(query)]


def test_the_columns_are_the_tables_but_the_load_time() -> None:
    assert COLUMNS == [
        "board_id",
        "member_id",
        "nickname",
        "city",
        "phone",
        "title",
        "body",
        "created_ts",
        "created_at",
        "modified_at",
        "member_modified_at",
        "board_partition",
        "board_offset",
        "member_partition",
        "member_offset",
        "detail_partition",
        "detail_offset",
    ]


def test_latest_per_board_keeps_each_boards_furthest_copy_in_first_seen_order() -> None:
    rows = [
        _row("b2", 0, 5, "b2 old"),
        _row("b1", 1, 9, "b1"),
        _row("b2", 0, 8, "b2 new"),
        _row("b2", 0, 6, "b2 between"),
        _row("b3", 2, 4, "b3 first"),
        _row("b3", 2, 4, "b3 replayed"),  # the same position: the later copy
    ]
    assert [(r["board_id"], r["title"]) for r in latest_per_board(rows)] == [
        ("b2", "b2 new"),
        ("b1", "b1"),
        ("b3", "b3 replayed"),
    ]
    assert latest_per_board([]) == []


def test_latest_per_board_keeps_the_newest_version_in_board_not_in_board_detail() -> None:
    rows = [_row("b1", 0, 5, "v2", board=8), _row("b1", 0, 6, "v1", board=7)]
    assert [r["title"] for r in latest_per_board(rows)] == ["v2"]
    # A version without a source position is older than any with one.
    assert [
        r["title"] for r in latest_per_board([_row("b1", 0, 5, board=3), _row("b1", 0, 6)])
    ] == ["t"]


def test_an_older_version_in_board_written_later_to_board_detail_is_skipped(
    engine: Engine,
) -> None:
    upsert(engine, [_row("b1", 0, 5, "v2", board=8)])
    upsert(engine, [_row("b1", 0, 6, "v1", board=7)])
    assert _table(engine) == [("b1", "v2", 0, 5)]
    upsert(engine, [_row("b1", 0, 7, "v2 replayed", board=8)])
    assert _table(engine) == [("b1", "v2 replayed", 0, 7)]
    upsert(engine, [_row("b1", 0, 3, "v3", board=9)])  # newer in board, earlier in board-detail
    assert _table(engine) == [("b1", "v3", 0, 3)]


def test_upsert_inserts_and_counts_the_boards_written(engine: Engine) -> None:
    written = upsert(engine, [_row("b1", 0, 1), _row("b2", 1, 1), _row("b1", 0, 3, "newer")])
    assert written == 2
    assert _table(engine) == [("b1", "newer", 0, 3), ("b2", "t", 1, 1)]
    with engine.connect() as connection:
        loaded = connection.execute(sa.select(board_detail.c.loaded_at)).scalars().all()
    assert len(loaded) == 2 and all(at is not None for at in loaded)


def test_nothing_to_write_touches_no_database() -> None:
    """Not even the dialect is looked at (an unsupported one would be refused)."""
    statements: list[object] = []
    mysql = sa.create_mock_engine("mysql://", lambda sql, *_a, **_k: statements.append(sql))
    assert upsert(mysql, []) == 0  # type: ignore[arg-type]
    assert statements == []


def test_an_overwrite_refreshes_the_load_time_a_refused_one_does_not(engine: Engine) -> None:
    upsert(engine, [_row("b1", 0, 5), _row("b2", 0, 6)])
    with engine.begin() as connection:
        connection.execute(sa.text("UPDATE board_detail SET loaded_at = '2000-01-01 00:00:00'"))
    upsert(engine, [_row("b1", 0, 7), _row("b2", 0, 1)])
    with engine.connect() as connection:
        query = sa.select(board_detail.c.board_id, board_detail.c.loaded_at)
        loaded = {board_id: at for board_id, at in connection.execute(query)}
    assert loaded["b1"].year > 2000
    assert loaded["b2"] == datetime(2000, 1, 1)


def test_a_newer_record_or_a_replay_overwrites_an_older_one_does_not(engine: Engine) -> None:
    upsert(engine, [_row("b1", 0, 5, "v5")])
    upsert(engine, [_row("b1", 0, 4, "v4")])
    assert _table(engine) == [("b1", "v5", 0, 5)]
    upsert(engine, [_row("b1", 0, 5, "v5 replayed")])
    assert _table(engine) == [("b1", "v5 replayed", 0, 5)]
    upsert(engine, [_row("b1", 0, 6, "v6")])
    assert _table(engine) == [("b1", "v6", 0, 6)]


def test_a_record_of_another_partition_overwrites_whatever_its_offset(engine: Engine) -> None:
    upsert(engine, [_row("b1", 0, 50, "p0")])
    upsert(engine, [_row("b1", 1, 2, "p1")])
    assert _table(engine) == [("b1", "p1", 1, 2)]


def test_rows_are_written_in_chunks_in_one_transaction(engine: Engine) -> None:
    rows = [_row(f"b{n}", 0, n) for n in range(5)]
    assert upsert(engine, rows, chunk=2) == 5
    assert [row[0] for row in _table(engine)] == ["b0", "b1", "b2", "b3", "b4"]


def test_a_chunk_the_database_refuses_rolls_back_the_whole_batch(engine: Engine) -> None:
    rows = [_row("b0", 0, 0), _row("b1", 0, 1), _row("b2", 0, 2) | {"member_id": None}]
    with pytest.raises(sa.exc.IntegrityError):
        upsert(engine, rows, chunk=2)
    assert _table(engine) == []


def test_another_database_is_refused_by_name() -> None:
    mysql = sa.create_mock_engine("mysql://", lambda *_args, **_kwargs: None)
    with pytest.raises(BoardstreamError) as refused:
        upsert(mysql, [_row("b1", 0, 1)])  # type: ignore[arg-type]
    assert str(refused.value) == "board_detail upserts support PostgreSQL and SQLite, not mysql"
