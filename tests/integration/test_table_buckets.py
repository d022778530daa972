"""``board_detail``'s per-bucket digests against real SQLite and PostgreSQL: each kind of
tampering changes exactly the bucket of the row it touched, the drill-down into that bucket names
exactly that board, and nothing that leaves the stored values alone changes anything."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from boardstream import database
from boardstream.reconcile.incremental import table_buckets as tb
from boardstream.sink import table as sink_table
from boardstream.sink.table import SinkTable
from tests.fixtures import sqlite_or_postgres_url
from tests.integration.orders_table import ORDERS

BUCKETS = 32  # about ten rows a bucket: a drill-down has neighbours to tell apart
ROWS = 300
TABLE = sink_table.board_detail


def board(i: int) -> str:
    return f"board-{i:04d}"


def make_row(i: int) -> dict[str, Any]:
    """Realistic, distinct rows; every tenth city NULL and the next one '', every seventh
    nickname NULL (what the tampering cases start from)."""
    return {
        "board_id": board(i),
        "member_id": 1_000 + i % 37,
        "nickname": None if i % 7 == 0 else f"member {i % 37}",
        "city": None if i % 10 == 0 else "" if i % 10 == 1 else f"city {i % 5}",
        "phone": f"010-{i:04d}-{i * 7 % 10_000:04d}",
        "title": f"title of board {i}, with some words in it ok",
        "body": f"body of board {i} " * 10,
        "created_ts": 1_700_000_000_000 + i,
        "created_at": "2026-11-20T10:00:00Z",
        "modified_at": "2026-11-20T11:00:00Z",
        "member_modified_at": "2026-11-19T09:00:00Z",
        "board_partition": i % 3,
        "board_offset": i,
        "member_partition": i % 2,
        "member_offset": i * 2,
        "detail_partition": i % 3,
        "detail_offset": 10 + i,
    }


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request, tmp_path) -> Iterator[Engine]:
    created = database.engine(sqlite_or_postgres_url(request, tmp_path))
    sink_table.create(created)
    assert sink_table.upsert(created, [make_row(i) for i in range(ROWS)]) == ROWS
    yield created
    created.dispose()


@dataclass(frozen=True)
class Before:
    buckets: dict[int, tb.BucketDigest]
    rows: dict[str, tb.RowDigest]


def before(engine: Engine) -> Before:
    return Before(
        tb.bucket_digests(engine, sink_table.BOARD_DETAIL, BUCKETS),
        tb.row_digests(engine, sink_table.BOARD_DETAIL, [board(i) for i in range(ROWS)], BUCKETS),
    )


def update(engine: Engine, board_id: str, **values: object) -> None:
    with engine.begin() as connection:
        changed = connection.execute(
            TABLE.update().where(TABLE.c.board_id == board_id).values(**values)
        ).rowcount
    assert changed == 1


def first(predicate: Callable[[dict[str, Any]], bool]) -> str:
    return next(board(i) for i in range(ROWS) if predicate(make_row(i)))


def in_other_buckets(count: int) -> list[str]:
    chosen: dict[int, str] = {}
    for i in range(ROWS):
        chosen.setdefault(tb.bucket_of(board(i), BUCKETS), board(i))
    return list(chosen.values())[:count]


def one_character(engine: Engine) -> list[str]:
    target = board(17)
    title = make_row(17)["title"]
    update(engine, target, title=title[:5] + "X" + title[6:])
    return [target]


def nulled(engine: Engine) -> list[str]:
    update(engine, board(18), phone=None)
    return [board(18)]


def null_to_empty(engine: Engine) -> list[str]:
    target = first(lambda row: row["city"] is None)
    update(engine, target, city="")
    return [target]


def empty_to_null(engine: Engine) -> list[str]:
    target = first(lambda row: row["city"] == "")
    update(engine, target, city=None)
    return [target]


def null_to_null_text(engine: Engine) -> list[str]:
    target = first(lambda row: row["nickname"] is None)
    update(engine, target, nickname="null")
    return [target]


def integer_changed(engine: Engine) -> list[str]:
    update(engine, board(19), member_id=make_row(19)["member_id"] + 1)
    return [board(19)]


def deleted(engine: Engine) -> list[str]:
    with engine.begin() as connection:
        connection.execute(TABLE.delete().where(TABLE.c.board_id == board(20)))
    return [board(20)]


def forged(engine: Engine) -> list[str]:
    sink_table.upsert(engine, [make_row(ROWS) | {"title": "a row no record made"}])
    return [board(ROWS)]


def titles_swapped(engine: Engine) -> list[str]:
    one, other = in_other_buckets(2)
    rows = {b: make_row(int(b.removeprefix("board-"))) for b in (one, other)}
    update(engine, one, title=rows[other]["title"])
    update(engine, other, title=rows[one]["title"])
    return [one, other]


def fraction_in_an_integer_column(engine: Engine) -> list[str]:
    """Half a millisecond more: SQLite keeps a REAL, PostgreSQL rounds into its bigint."""
    with engine.begin() as connection:
        connection.execute(
            sa.text("UPDATE board_detail SET created_ts = created_ts + 0.5 WHERE board_id = :b"),
            {"b": board(23)},
        )
    return [board(23)]


def detail_offset_changed(engine: Engine) -> list[str]:
    update(engine, board(21), detail_offset=make_row(21)["detail_offset"] + 1)
    return [board(21)]


def text_moved_across_columns(engine: Engine) -> list[str]:
    """The title's last character moved to the body's front: the concatenation is unchanged."""
    row = make_row(22)
    update(engine, board(22), title=row["title"][:-1], body=row["title"][-1] + row["body"])
    return [board(22)]


TAMPERINGS = [
    one_character,
    nulled,
    null_to_empty,
    empty_to_null,
    null_to_null_text,
    integer_changed,
    fraction_in_an_integer_column,
    deleted,
    forged,
    titles_swapped,
    detail_offset_changed,
    text_moved_across_columns,
]


@pytest.mark.parametrize("tamper", TAMPERINGS, ids=lambda f: f.__name__)
def test_each_tampering_changes_exactly_its_buckets_and_the_drill_down_names_its_board(
    engine: Engine, tamper: Callable[[Engine], list[str]]
) -> None:
    was = before(engine)
    tampered = tamper(engine)

    now = tb.bucket_digests(engine, sink_table.BOARD_DETAIL, BUCKETS)
    differing = tb.differing_buckets(was.buckets, now)
    assert differing == sorted({tb.bucket_of(b, BUCKETS) for b in tampered})
    # The ledger's running totals (row digests summed) see the same.
    assert tb.differing_buckets(tb.totals(was.rows.values()), now) == differing
    drilled = tb.rows_in_buckets(engine, sink_table.BOARD_DETAIL, differing, BUCKETS)
    expected = {b: row for b, row in was.rows.items() if row.bucket in differing}
    assert len(expected) > len(tampered)  # the tampered rows had neighbours in their buckets
    assert tb.differing_rows(expected, drilled) == sorted(tampered)


def test_the_same_table_digests_alike_twice_and_as_its_row_digests_summed(engine: Engine) -> None:
    first_call = tb.bucket_digests(engine, sink_table.BOARD_DETAIL, BUCKETS)
    assert tb.bucket_digests(engine, sink_table.BOARD_DETAIL, BUCKETS) == first_call
    assert sorted(first_call) == list(range(BUCKETS))
    assert sum(digest.rows for digest in first_call.values()) == ROWS
    rows = tb.row_digests(engine, sink_table.BOARD_DETAIL, [board(i) for i in range(ROWS)], BUCKETS)
    assert len(rows) == ROWS
    assert tb.totals(rows.values()) == first_call
    assert tb.rows_in_buckets(engine, sink_table.BOARD_DETAIL, range(BUCKETS), BUCKETS) == rows


def test_default_bucket_count(engine: Engine) -> None:
    digests = tb.bucket_digests(engine, sink_table.BOARD_DETAIL)
    assert all(0 <= bucket < tb.DEFAULT_BUCKETS for bucket in digests)
    assert sum(digest.rows for digest in digests.values()) == ROWS
    assert (
        tb.totals(
            tb.row_digests(
                engine, sink_table.BOARD_DETAIL, [board(i) for i in range(ROWS)]
            ).values()
        )
        == digests
    )


def test_buckets_follow_the_board_id_alone_as_python_computes_them(engine: Engine) -> None:
    rows = tb.row_digests(engine, sink_table.BOARD_DETAIL, [board(i) for i in range(ROWS)], BUCKETS)
    assert {b: row.bucket for b, row in rows.items()} == {
        board(i): tb.bucket_of(board(i), BUCKETS) for i in range(ROWS)
    }
    unicode_id = "게시판-é-🙂"
    sink_table.upsert(engine, [make_row(0) | {"board_id": unicode_id}])
    (row,) = tb.row_digests(engine, sink_table.BOARD_DETAIL, [unicode_id], BUCKETS).values()
    assert row.bucket == tb.bucket_of(unicode_id, BUCKETS)
    update(engine, unicode_id, title="another title", member_id=5, detail_offset=99)
    (moved,) = tb.row_digests(engine, sink_table.BOARD_DETAIL, [unicode_id], BUCKETS).values()
    assert moved.bucket == row.bucket and moved.digest != row.digest


def test_rewriting_identical_values_keeps_every_digest(engine: Engine) -> None:
    """A replayed record rewrites its row (and loaded_at): the stored values, so the digests,
    stay."""
    was = before(engine)
    with engine.connect() as connection:
        loaded_at = connection.execute(sa.select(TABLE.c.loaded_at)).scalars().first()
    replayed = [make_row(i) for i in range(0, ROWS, 3)]
    assert sink_table.upsert(engine, replayed) == len(replayed)
    with engine.begin() as connection:
        connection.execute(TABLE.update().values(loaded_at=datetime(2001, 2, 3, tzinfo=UTC)))
        assert connection.execute(sa.select(TABLE.c.loaded_at)).scalars().first() != loaded_at
    assert tb.bucket_digests(engine, sink_table.BOARD_DETAIL, BUCKETS) == was.buckets
    assert tb.row_digests(engine, sink_table.BOARD_DETAIL, list(was.rows), BUCKETS) == was.rows


def test_row_digests_in_chunks_skip_absent_boards(engine: Engine, monkeypatch) -> None:
    everything = tb.row_digests(
        engine, sink_table.BOARD_DETAIL, [board(i) for i in range(ROWS)], BUCKETS
    )
    monkeypatch.setattr(tb, "ID_CHUNK", 7)
    wanted = [board(i) for i in range(0, ROWS, 2)] + ["no-such-board", board(0)]
    assert tb.row_digests(engine, sink_table.BOARD_DETAIL, wanted, BUCKETS) == {
        board(i): everything[board(i)] for i in range(0, ROWS, 2)
    }
    assert tb.row_digests(engine, sink_table.BOARD_DETAIL, [], BUCKETS) == {}
    assert tb.rows_in_buckets(engine, sink_table.BOARD_DETAIL, [], BUCKETS) == {}


def test_through_a_connection_the_digests_are_of_what_its_transaction_sees(
    engine: Engine,
) -> None:
    """A run verifying rows through a transaction takes their digests in it: a write it has not
    seen (here: one it has and the others have not) does not slip into the running totals."""
    was = before(engine)
    with engine.connect() as connection, connection.begin() as transaction:
        connection.execute(
            TABLE.update().where(TABLE.c.board_id == board(5)).values(title="changed")
        )
        inside = tb.row_digests(connection, sink_table.BOARD_DETAIL, [board(5)], BUCKETS)
        assert inside[board(5)] != was.rows[board(5)]
        assert tb.differing_buckets(
            was.buckets, tb.bucket_digests(connection, sink_table.BOARD_DETAIL, BUCKETS)
        ) == [was.rows[board(5)].bucket]
        assert board(5) in tb.rows_in_buckets(
            connection, sink_table.BOARD_DETAIL, [was.rows[board(5)].bucket], BUCKETS
        )
        assert tb.row_digests(engine, sink_table.BOARD_DETAIL, [board(5)], BUCKETS) == {
            board(5): was.rows[board(5)]
        }
        transaction.rollback()
    assert tb.bucket_digests(engine, sink_table.BOARD_DETAIL, BUCKETS) == was.buckets


def test_an_empty_table_has_no_buckets(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(TABLE.delete())
    assert tb.bucket_digests(engine, sink_table.BOARD_DETAIL, BUCKETS) == {}
    assert (
        tb.differing_buckets({}, tb.bucket_digests(engine, sink_table.BOARD_DETAIL, BUCKETS)) == []
    )


def digest_of(engine: Engine, *expressions: str) -> int:
    """The digest the table's query would give a row of these SQL values."""
    with engine.connect() as connection:
        dialect = tb._prepare(connection)
        sql = f"SELECT {tb._digest_sql(dialect, expressions, tagged=True)}"
        return connection.execute(sa.text(sql)).scalar_one()


def test_canonical_rows_keep_types_nulls_and_columns_apart(engine: Engine) -> None:
    cases = {
        "integer 1": ("CAST(1 AS BIGINT)",),
        "text 1": ("CAST('1' AS TEXT)",),
        "NULL": ("NULL",),
        "empty text": ("CAST('' AS TEXT)",),
        "text null": ("CAST('null' AS TEXT)",),
        "a|b, c": ("CAST('a|b' AS TEXT)", "CAST('c' AS TEXT)"),
        "a, b|c": ("CAST('a' AS TEXT)", "CAST('b|c' AS TEXT)"),
        "a, NULL": ("CAST('a' AS TEXT)", "NULL"),
        "NULL, a": ("NULL", "CAST('a' AS TEXT)"),
        'quote a", b': ("CAST('a\"' AS TEXT)", "CAST('b' AS TEXT)"),
        'quote a, "b': ("CAST('a' AS TEXT)", "CAST('\"b' AS TEXT)"),
        "12, 3": ("CAST(12 AS BIGINT)", "CAST(3 AS BIGINT)"),
        "1, 23": ("CAST(1 AS BIGINT)", "CAST(23 AS BIGINT)"),
    }
    digests = {name: digest_of(engine, *sql) for name, sql in cases.items()}
    assert len(set(digests.values())) == len(cases), digests
    assert digest_of(engine, *cases["a|b, c"]) == digests["a|b, c"]


def test_sqlite_blob_digests_apart_from_text_without_an_error(tmp_path) -> None:
    """SQLite stores a BLOB in any column; json_array() refuses one. Tagged, it neither fails the
    whole query nor digests like any text."""
    engine = database.engine(f"sqlite:///{tmp_path / 'blob.db'}")
    sink_table.create(engine)
    sink_table.upsert(engine, [make_row(i) for i in range(3)])
    was = tb.row_digests(engine, sink_table.BOARD_DETAIL, [board(i) for i in range(3)], BUCKETS)
    with engine.begin() as connection:
        connection.execute(
            sa.text("UPDATE board_detail SET title = CAST(title AS BLOB) WHERE board_id = :b"),
            {"b": board(1)},
        )
        kinds = connection.execute(sa.text("SELECT typeof(title) FROM board_detail ORDER BY 1"))
        assert list(kinds.scalars()) == ["blob", "text", "text"]
    now = tb.row_digests(engine, sink_table.BOARD_DETAIL, [board(i) for i in range(3)], BUCKETS)
    assert tb.differing_rows(was, now) == [board(1)]
    assert tb.totals(now.values()) == tb.bucket_digests(engine, sink_table.BOARD_DETAIL, BUCKETS)
    assert tb.every_row(engine, sink_table.BOARD_DETAIL, BUCKETS) == now
    assert tb.rows_in_buckets(engine, sink_table.BOARD_DETAIL, range(BUCKETS), BUCKETS) == now
    as_text = {
        digest_of(engine, value)
        for value in ("X'616263'", "'abc'", "'616263'", '\'["blob","616263"]\'')
    }
    assert len(as_text) == 4


def tagged_row_digests(engine: Engine) -> dict[str, tb.RowDigest]:
    """Every row's digest with each value tested for a BLOB: the definition in full."""
    with engine.connect() as connection:
        tb._prepare(connection)
        named = tb._Named.of(connection, sink_table.BOARD_DETAIL)
        sql = tb._digests_select("sqlite", named, BUCKETS, tagged=True)
        return {
            board_id: tb.RowDigest(bucket, digest & (2**64 - 1))
            for board_id, bucket, digest in connection.execute(sa.text(sql))
        }


def test_sqlite_digests_untagged_while_no_blob_is_stored_are_the_tagged_ones(tmp_path) -> None:
    """Without a BLOB in the table, SQLite's digests skip the per-value BLOB test (a fifth of
    their time): they must be exactly what the tagged definition gives, row by row and per
    bucket, or a table would seem changed after an upgrade."""
    engine = database.engine(f"sqlite:///{tmp_path / 'plain.db'}")
    sink_table.create(engine)
    sink_table.upsert(engine, [make_row(i) for i in range(ROWS)])
    tagged = tagged_row_digests(engine)
    assert len(tagged) == ROWS
    assert tb.every_row(engine, sink_table.BOARD_DETAIL, BUCKETS) == tagged
    assert tb.row_digests(engine, sink_table.BOARD_DETAIL, list(tagged), BUCKETS) == tagged
    assert tb.rows_in_buckets(engine, sink_table.BOARD_DETAIL, range(BUCKETS), BUCKETS) == tagged
    assert tb.bucket_digests(engine, sink_table.BOARD_DETAIL, BUCKETS) == tb.totals(tagged.values())


def test_row_digests_are_pinned(engine: Engine) -> None:
    """A ledger remembers digests across versions: the canonical row and its hash must not
    move (per database: PostgreSQL's JSON text is spaced, SQLite's is not)."""
    pinned = {
        "sqlite": {board(0): 165383341839165246, board(1): 5857129121483283564},
        "postgresql": {board(0): 13612082682650900536, board(1): 1772434322068664171},
    }
    digests = tb.row_digests(engine, sink_table.BOARD_DETAIL, [board(0), board(1)], BUCKETS)
    assert {b: d.digest for b, d in digests.items()} == pinned[engine.dialect.name]


@pytest.mark.parametrize(
    "change",
    ["amount = amount + 0.01", "vip = NOT vip", "customer_since = NULL", "gift = NULL"],
)
def test_a_declared_tables_rows_digest_and_a_changed_value_is_found(
    orders_url: str, change: str
) -> None:
    """orders' table (issue #64: text ids under another name, decimals, booleans, a date):
    every row digested by its own key and columns, the buckets their rows' sum, and a changed
    decimal, boolean or date found in exactly its row's bucket, then its row."""
    engine = database.engine(orders_url)
    table = SinkTable.of(ORDERS)
    rows = tb.every_row(engine, table, BUCKETS)
    assert sorted(rows) == [f"o{i:04d}" for i in range(300)]
    buckets = tb.bucket_digests(engine, table, BUCKETS)
    assert buckets == tb.totals(rows.values())
    assert tb.row_digests(engine, table, ["o0003", "absent"], BUCKETS) == {"o0003": rows["o0003"]}
    assert tb.id_after(engine, table, None, 2) == "o0001"
    with engine.connect() as connection, connection.begin() as transaction:
        connection.execute(
            sa.text(f"UPDATE order_customer SET {change} WHERE order_id IN ('o0003', 'o0005')")
        )
        changed = tb.bucket_digests(connection, table, BUCKETS)
        wanted = {tb.bucket_of("o0003", BUCKETS), tb.bucket_of("o0005", BUCKETS)}
        assert set(tb.differing_buckets(buckets, changed)) == wanted
        drilled = tb.rows_in_buckets(connection, table, wanted, BUCKETS)
        expected = {record_id: rows[record_id] for record_id in drilled}
        assert tb.differing_rows(expected, drilled) == ["o0003", "o0005"]
        transaction.rollback()
    engine.dispose()
