"""The sink table's DDL, derived from a declaration (boardstream/sink/ddl.py). ``board_detail``'s
is pinned as it was written by hand before it was derived: a database made by any earlier
version must be the table this one declares, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import decimal
from datetime import date
from pathlib import Path

import pytest
import sqlalchemy as sa
from pydantic import TypeAdapter
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.schema import CreateIndex, CreateTable

from boardstream import database
from boardstream.errors import BoardstreamError
from boardstream.pipelines import FieldType, Pipeline, shipped
from boardstream.sink.ddl import column_type, sink_table
from boardstream.sink.table import SinkTable, board_detail
from tests.unit.pipelines.declarations import ORDERS, changed

BOARD_DETAIL_COLUMNS = (
    "\tboard_id VARCHAR(64) NOT NULL, \n"
    "\tmember_id BIGINT NOT NULL, \n"
    "\tnickname TEXT, \n"
    "\tcity TEXT, \n"
    "\tphone TEXT, \n"
    "\ttitle TEXT, \n"
    "\tbody TEXT, \n"
    "\tcreated_ts BIGINT, \n"
    "\tcreated_at TEXT, \n"
    "\tmodified_at TEXT, \n"
    "\tmember_modified_at TEXT, \n"
    "\tboard_partition INTEGER, \n"
    "\tboard_offset BIGINT, \n"
    "\tmember_partition INTEGER, \n"
    "\tmember_offset BIGINT, \n"
    "\tdetail_partition INTEGER NOT NULL, \n"
    "\tdetail_offset BIGINT NOT NULL, \n"
)
BOARD_DETAIL_INDEX = "CREATE INDEX ix_board_detail_member_id ON board_detail (member_id)"
BOARD_DETAIL_DDL = {
    "sqlite": (
        "\nCREATE TABLE board_detail (\n"
        + BOARD_DETAIL_COLUMNS
        + "\tloaded_at DATETIME DEFAULT CURRENT_TIMESTAMP, \n"
        "\tPRIMARY KEY (board_id)\n"
        ")\n"
        " WITHOUT ROWID\n\n",
        BOARD_DETAIL_INDEX,
    ),
    "postgresql": (
        "\nCREATE TABLE board_detail (\n"
        + BOARD_DETAIL_COLUMNS
        + "\tloaded_at TIMESTAMP WITH TIME ZONE DEFAULT now(), \n"
        "\tPRIMARY KEY (board_id)\n"
        ")\n\n",
        BOARD_DETAIL_INDEX,
    ),
}
DIALECTS = {"sqlite": sqlite.dialect(), "postgresql": postgresql.dialect()}


def compiled(table: sa.Table, dialect: str) -> tuple[str, ...]:
    """``CREATE TABLE`` and each ``CREATE INDEX`` of ``table``, as ``dialect`` writes them."""
    indexes = sorted(table.indexes, key=lambda index: str(index.name))
    return tuple(
        str(statement.compile(dialect=DIALECTS[dialect]))
        for statement in (CreateTable(table), *(CreateIndex(index) for index in indexes))
    )


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_board_detail_is_the_table_written_by_hand_before(dialect: str) -> None:
    assert compiled(board_detail, dialect) == BOARD_DETAIL_DDL[dialect]


ORDER_CUSTOMER_DDL = (
    "\torder_id VARCHAR(36) NOT NULL, \n"
    "\tcustomer_id VARCHAR(36) NOT NULL, \n"
    "\tcustomer_name VARCHAR(200), \n"
    "\tamount NUMERIC(12, 2), \n"
    "\tcredit_limit NUMERIC(14, 2), \n"
    "\tvip BOOLEAN, \n"
    "\tcustomer_since DATE, \n"
    "\tgift BOOLEAN, \n"
    "\tplaced_at BIGINT, \n"
    "\tstream_partition INTEGER, \n"
    "\tstream_offset BIGINT, \n"
    "\ttable_partition INTEGER, \n"
    "\ttable_offset BIGINT, \n"
    "\tjoined_partition INTEGER NOT NULL, \n"
    "\tjoined_offset BIGINT NOT NULL, \n"
)


def test_orders_keeps_its_named_columns_renamed_typed_and_its_positions_derived() -> None:
    """Dropped fields (weight_kg, note, email) have no column; the positions it does not name
    are added under their default names; the join column is indexed."""
    table = sink_table(shipped("orders"))
    create, index = compiled(table, "postgresql")
    assert create == (
        "\nCREATE TABLE order_customer (\n"
        + ORDER_CUSTOMER_DDL
        + "\tloaded_at TIMESTAMP WITH TIME ZONE DEFAULT now(), \n"
        "\tPRIMARY KEY (order_id)\n"
        ")\n\n"
    )
    assert index == "CREATE INDEX ix_order_customer_customer_id ON order_customer (customer_id)"


DOUBLE = {"sqlite": "DOUBLE", "postgresql": "DOUBLE PRECISION"}


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ({"type": "text"}, "TEXT"),
        ({"type": "text", "min_chars": 1, "max_chars": 7}, "VARCHAR(7)"),
        ({"type": "int64"}, "BIGINT"),
        ({"type": "double"}, None),
        ({"type": "decimal", "precision": 38, "scale": 10}, "NUMERIC(38, 10)"),
        ({"type": "decimal", "precision": 5}, "NUMERIC(5, 0)"),
        ({"type": "boolean"}, "BOOLEAN"),
        ({"type": "date"}, "DATE"),
        # A timestamp is stored as written: an epoch integer, an ISO 8601 text.
        ({"type": "timestamp", "format": "epoch_ms"}, "BIGINT"),
        ({"type": "timestamp", "format": "epoch_us"}, "BIGINT"),
        ({"type": "timestamp"}, "TEXT"),
    ],
)
def test_each_field_type_has_the_column_that_holds_its_values(
    dialect: str, field: dict[str, object], expected: str | None
) -> None:
    kind = column_type(TypeAdapter(FieldType).validate_python(field))
    assert kind.compile(dialect=DIALECTS[dialect]) == (expected or DOUBLE[dialect])


def test_the_table_key_is_indexed_when_the_sink_keeps_it_but_not_the_join_field() -> None:
    columns = dict(ORDERS["sink"]["columns"])
    del columns["customer_id"]
    pipeline = Pipeline.model_validate(
        changed({"sink.columns": columns | {"customer": "table.id"}})
    )
    table = sink_table(pipeline)
    assert [index.columns.keys() for index in table.indexes] == [["customer"]]
    assert table.c.customer.nullable is False


def test_a_derived_table_upserts_by_its_own_key_and_order(tmp_path: Path) -> None:
    """orders' table takes its types' values back unchanged, keyed by order_id, a later
    version by the stream's position replacing an earlier one."""
    orders = SinkTable.of(shipped("orders"))
    assert (orders.key, orders.newest_order) == (
        "order_id",
        ("stream_partition", "stream_offset", "joined_partition", "joined_offset"),
    )
    engine = database.engine(f"sqlite:///{tmp_path / 'orders.db'}")
    orders.create(engine)
    row = dict.fromkeys(orders.columns) | {
        "order_id": "o1",
        "customer_id": "c1",
        "amount": decimal.Decimal("1234567890.12"),
        "vip": True,
        "customer_since": date(2020, 2, 29),
        "placed_at": 2**62,
        "stream_partition": 0,
        "stream_offset": 5,
        "joined_partition": 0,
        "joined_offset": 1,
    }
    older = row | {"stream_offset": 4, "joined_offset": 2, "vip": False}
    assert orders.upsert(engine, [row]) == 1
    assert orders.upsert(engine, [older]) == 1  # written, not applied: superseded
    with engine.connect() as connection:
        stored = connection.execute(sa.select(orders.table)).mappings().one()
    assert {name: stored[name] for name in orders.columns} == row


@pytest.mark.parametrize(("precision", "refused"), [(15, False), (16, True)])
def test_sqlite_refuses_a_decimal_it_would_round(
    tmp_path: Path, precision: int, refused: bool
) -> None:
    """SQLite stores a NUMERIC as a double when 15 digits survive: of 2,000 random values with
    16 digits, 95 came back altered (none with 15), so such a table is refused on SQLite."""
    wide = changed(
        {"stream.fields.amount": {"type": "decimal", "precision": precision, "scale": 3}}
    )
    orders = SinkTable.of(Pipeline.model_validate(wide))
    engine = database.engine(f"sqlite:///{tmp_path / 'orders.db'}")
    if not refused:
        orders.create(engine)
        assert sa.inspect(engine).has_table("order_customer")
        return
    with pytest.raises(BoardstreamError) as error:
        orders.create(engine)
    assert str(error.value) == (
        "order_customer.amount is decimal(16,3): SQLite keeps 15 significant digits of a "
        "decimal and would round the rest; use PostgreSQL (BOARDSTREAM_DATABASE_URL) or a "
        "precision of at most 15"
    )
    assert not sa.inspect(engine).has_table("order_customer")


def test_postgresql_takes_a_wide_decimal() -> None:
    wide = changed({"stream.fields.amount": {"type": "decimal", "precision": 38, "scale": 10}})
    ddl = str(
        CreateTable(SinkTable.of(Pipeline.model_validate(wide)).table).compile(
            dialect=postgresql.dialect()
        )
    )
    assert "amount NUMERIC(38, 10)" in ddl
