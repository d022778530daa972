"""``readers.read_table`` by board ids (an incremental run's boards) against real SQLite and
PostgreSQL: exactly those boards' rows, read as type-strictly as the whole table; and a declared
pipeline's table, its decimals, booleans and dates read as loaded."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
import sqlalchemy as sa

from boardstream import database
from boardstream.joins.topics import Deployed
from boardstream.reconcile.checks.table_checks import NULL_BOARD_ID
from boardstream.reconcile.reads import readers
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import Settings
from boardstream.sink import table as sink_table
from boardstream.sink.table import SinkTable
from tests.fixtures import sqlite_or_postgres_url
from tests.integration.orders_table import ORDERS, order_row
from tests.integration.test_table_buckets import board, make_row

ROWS = 2_000
SHIPPED = ReconcileTarget.shipped(Settings())


def loaded(url: str, tmp_path: Path) -> Settings:
    engine = database.engine(url)
    sink_table.create(engine)
    assert sink_table.upsert(engine, [make_row(i) for i in range(ROWS)]) == ROWS
    engine.dispose()
    return Settings(var_dir=tmp_path, database_url=url)


@pytest.fixture(params=["sqlite", "postgresql"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    return loaded(sqlite_or_postgres_url(request, tmp_path), tmp_path)


@pytest.mark.parametrize("wanted", [0, 1, 899, 900, 901, 1_000])
def test_only_the_boards_asked_for_across_chunks(settings: Settings, wanted: int) -> None:
    ids = [board(i) for i in range(0, 2 * wanted, 2)] + ["not-in-the-table"]
    read = readers.read_table(settings, SHIPPED, ids)
    whole = readers.read_table(settings, SHIPPED)
    assert whole.rows.num_rows == ROWS
    asked = whole.rows.filter(pc.is_in(whole.rows.column("board_id"), value_set=pa.array(ids)))
    assert asked.num_rows == wanted
    assert read.rows.sort_by("board_id").equals(asked.sort_by("board_id"))
    assert read.mismatches == []


def test_a_value_of_another_type_is_reported_for_the_boards_asked_for(tmp_path: Path) -> None:
    """SQLite stores a value of another type than its column's: reported, not coerced."""
    settings = loaded(f"sqlite:///{tmp_path / 'test.db'}", tmp_path)
    engine = database.engine(settings.database)
    with engine.begin() as connection:
        connection.execute(
            sa.text("UPDATE board_detail SET created_ts = 'soon' WHERE board_id = :b"),
            {"b": board(3)},
        )
    engine.dispose()
    read = readers.read_table(settings, SHIPPED, [board(3), board(4)])
    assert [m.example() for m in read.mismatches] == [f"{board(3)} (created_ts='soon')"]
    assert read.rows.num_rows == 2
    assert readers.read_table(settings, SHIPPED, [board(4)]).mismatches == []


def test_rows_without_a_board_id_are_read_by_their_stand_in(tmp_path: Path) -> None:
    """A table made by other hands (here: rebuilt without its constraints) can hold a row with
    no board id; the checks name such rows by ``NULL_BOARD_ID``, and an incremental run asks
    for them by that name."""
    settings = loaded(f"sqlite:///{tmp_path / 'test.db'}", tmp_path)
    engine = database.engine(settings.database)
    with engine.begin() as connection:
        for statement in (
            "CREATE TABLE copy AS SELECT * FROM board_detail",
            "DROP TABLE board_detail",
            "ALTER TABLE copy RENAME TO board_detail",
        ):
            connection.execute(sa.text(statement))
        connection.execute(
            sa.text(
                "INSERT INTO board_detail (board_id, member_id, detail_partition, detail_offset)"
                " VALUES (NULL, 1, 0, 5)"
            )
        )
    engine.dispose()
    read = readers.read_table(settings, SHIPPED, [NULL_BOARD_ID, board(4)])
    assert sorted(read.rows.column("board_id").to_pylist(), key=str) == [None, board(4)]
    assert readers.read_table(settings, SHIPPED, [board(4)]).rows.num_rows == 1


ORDERS_TARGET = ReconcileTarget.of(Deployed.declared(ORDERS))


def test_a_declared_tables_decimals_booleans_and_dates_are_read_as_loaded(
    orders_url: str, tmp_path: Path
) -> None:
    """Read as its declaration types it: on PostgreSQL in the driver's own types, on SQLite
    from the forms it keeps them in, each value as loaded."""
    read = readers.read_table(Settings(var_dir=tmp_path, database_url=orders_url), ORDERS_TARGET)
    assert read.mismatches == []
    held = read.rows.sort_by("order_id").drop_columns(["typed"]).to_pylist()
    assert held == [order_row(i) for i in range(300)]
    assert read.rows.schema.field("amount").type == pa.decimal128(12, 2)


@pytest.mark.parametrize(
    ("column", "stored"),
    [("amount", "12.345"), ("amount", "'twelve'"), ("vip", "2"), ("customer_since", "'soon'")],
)
def test_a_tampered_declared_value_is_a_mismatch_not_a_rounding(
    column: str, stored: str, tmp_path: Path
) -> None:
    """SQLite takes any value in any column: one its driver's converters would round or
    truthify into a passing value is reported, its row not compared."""
    url = f"sqlite:///{tmp_path / 'test.db'}"
    engine = database.engine(url)
    target = SinkTable.of(ORDERS)
    target.create(engine)
    target.upsert(engine, [order_row(i) for i in range(3)])
    with engine.begin() as connection:
        connection.execute(
            sa.text(f"UPDATE order_customer SET {column} = {stored} WHERE order_id = 'o0001'")
        )
    engine.dispose()
    read = readers.read_table(Settings(var_dir=tmp_path, database_url=url), ORDERS_TARGET)
    # What SQLite hands back is what was stored, shown as its repr.
    assert [m.example() for m in read.mismatches] == [f"o0001 ({column}={stored})"]
    assert read.rows.sort_by("order_id").column("typed").to_pylist() == [True, False, True]
