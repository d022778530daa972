"""The parser's pure parts for any declaration (boardstream/joins/parse.py, schema.py): each
declared type's parser field, the Spark type it is read as, and the fields both sides share.
The column expressions are covered on Spark by tests/integration/test_parse_declared.py."""

from __future__ import annotations

import pytest

from boardstream.joins import parse, schema
from boardstream.joins.schema import Contract, Field
from boardstream.pipelines import shipped


@pytest.mark.parametrize(
    ("field", "read_as"),
    [
        (Field("a", schema.TEXT, False), "string"),
        (Field("a", schema.TIMESTAMP, False), "string"),  # checked as text, then as a time
        (Field("a", schema.DATE, False), "string"),  # checked as text, then as a date
        (Field("a", schema.INT64, False), "bigint"),
        (Field("a", schema.DOUBLE, False), "double"),
        (Field("a", schema.BOOLEAN, False), "boolean"),
        (Field("a", schema.DECIMAL, False, precision=12, scale=2), "decimal(12,2)"),
    ],
)
def test_each_kind_is_read_as_its_json_types_spark_type(field: Field, read_as: str) -> None:
    assert parse._read_as(field) == read_as


def test_the_contract_names_each_sides_key_field_and_its_records() -> None:
    orders = Contract.of(shipped("orders"))
    assert (orders.stream_id, orders.table_key) == ("order_id", "id")
    assert (orders.stream_label, orders.table_label) == ("orders", "customers")
    assert orders.table_field("credit_limit") == Field(
        "credit_limit", schema.DECIMAL, False, precision=14, scale=2
    )
    assert (schema.BOARD_DETAIL.stream_label, schema.BOARD_DETAIL.table_label) == (
        "board",
        "member",
    )


def test_a_declarations_fields_are_read_from_its_own_sides() -> None:
    orders = Contract.of(shipped("orders"))
    fields = parse._fields(orders.stream, orders.table)
    assert list(fields) == [field.name for field in orders.stream + orders.table]


def test_decimals_of_another_size_under_one_name_are_two_types() -> None:
    """A shared name is read once: as decimal(12,2) it cannot also be decimal(14,2)."""
    amount = Field("amount", schema.DECIMAL, False, precision=12, scale=2)
    wider = Field("amount", schema.DECIMAL, False, precision=14, scale=2)
    with pytest.raises(AssertionError, match=r"^amount$"):
        parse._fields((amount,), (wider,))
    assert parse._fields((amount,), (amount,)) == {"amount": amount}
