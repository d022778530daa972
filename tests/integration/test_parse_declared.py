"""A declaration's field contract through the join's real parsing on Spark: the shipped
``orders`` pipeline (text keys, decimals, a double, booleans, a date, epoch timestamps), each
type's breaches a dead letter with the exact reason, and its valid values typed as declared,
never rounded or coerced."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

import pytest

from boardstream.joins.parse import parse_declared
from boardstream.joins.schema import Contract
from boardstream.pipelines import shipped
from tests.integration.test_hostile_input import raw_frame

ORDERS, CUSTOMERS = "orders", "customers"
MAX_BYTES = 4_096
CONTRACT = Contract.of(shipped("orders"))


def order(**fields: object) -> bytes:
    record = {"order_id": "o1", "customer_id": "c1", "amount": 12.5, "placed_at": 5}
    return _json(record | fields)


def customer(**fields: object) -> bytes:
    return _json({"id": "c1", "updated_at": 7} | fields)


def _json(record: dict[str, object]) -> bytes:
    """Numbers as written: a Decimal is its literal digits, not a float's."""
    text = json.dumps(
        {k: f"@{v}@" if isinstance(v, Decimal) else v for k, v in record.items()},
        ensure_ascii=False,
    )
    for value in record.values():
        if isinstance(value, Decimal):
            text = text.replace(f'"@{value}@"', str(value))
    return text.encode()


def raw(text: str) -> bytes:
    """An order whose amount is the literal ``text``."""
    return order().replace(b"12.5", text.encode())


O1, C1 = b"o1", b"c1"
INVALID = [
    # text: type, bounds, U+0000; the stream key is the id's text
    (ORDERS, O1, order(note=5), "note must be a JSON string, got BIGINT"),
    (ORDERS, O1, order(note="x" * 501), "note is 501 characters, more than 500"),
    (ORDERS, b"", order(order_id=""), "order_id is shorter than 1 character(s)"),
    (ORDERS, O1, order(note="a\x00"), "note contains U+0000, which text columns cannot hold"),
    (ORDERS, O1, order(customer_id=None), "missing field customer_id (absent or null)"),
    (ORDERS, b"o2", order(), "key does not match order_id"),
    (ORDERS, O1, None, "an orders record with a null value (orders have no tombstones)"),
    # decimal(12,2): an exact number whose digits fit, never rounded
    (ORDERS, O1, raw("1.234"), "amount does not fit decimal(12,2) without rounding: 1.234"),
    (
        ORDERS,
        O1,
        raw("12345678901"),
        "amount does not fit decimal(12,2) without rounding: 12345678901",
    ),
    (
        ORDERS,
        O1,
        raw("-12345678901.5"),
        "amount does not fit decimal(12,2) without rounding: -12345678901.5",
    ),
    (
        ORDERS,
        O1,
        raw("1e2"),
        "amount must be a JSON number for decimal(12,2) (no exponent), got DOUBLE",
    ),
    (
        ORDERS,
        O1,
        order(amount="12.50"),
        "amount must be a JSON number for decimal(12,2) (no exponent), got STRING",
    ),
    (ORDERS, O1, order(amount=None), "missing field amount (absent or null)"),
    # double: any JSON number within range
    (ORDERS, O1, order(weight_kg="1.5"), "weight_kg must be a JSON number, got STRING"),
    (ORDERS, O1, order(weight_kg=True), "weight_kg must be a JSON number, got BOOLEAN"),
    (
        ORDERS,
        O1,
        order().replace(b"}", b', "weight_kg": 1e400}'),
        "weight_kg is a JSON number beyond the range of a double",
    ),
    # boolean: true or false only
    (ORDERS, O1, order(gift=1), "gift must be a JSON boolean (true or false), got BIGINT"),
    (ORDERS, O1, order(gift="true"), "gift must be a JSON boolean (true or false), got STRING"),
    # timestamp, epoch_us: an int64 integer
    (
        ORDERS,
        O1,
        order(placed_at="5"),
        "placed_at must be a JSON integer in the int64 range, got STRING",
    ),
    (
        ORDERS,
        O1,
        order(placed_at=1.5),
        "placed_at must be a JSON integer in the int64 range, got DECIMAL(2,1)",
    ),
    # the table: a text key equal to its key field; date, decimal(14,2)
    (CUSTOMERS, None, customer(), "a customers record without a key"),
    (CUSTOMERS, b"\xff", customer(), "key is not valid UTF-8"),
    (CUSTOMERS, b"c2", customer(), "id in the value differs from the key"),
    (CUSTOMERS, C1, customer(since="2021-02-29"), "since is not a date (YYYY-MM-DD): 2021-02-29"),
    (CUSTOMERS, C1, customer(since="2021-2-1"), "since is not a date (YYYY-MM-DD): 2021-2-1"),
    (CUSTOMERS, C1, customer(since=20210201), "since must be a JSON string, got BIGINT"),
    (
        CUSTOMERS,
        C1,
        customer(credit_limit=Decimal("0.001")),
        "credit_limit does not fit decimal(14,2) without rounding: 0.001",
    ),
    (
        CUSTOMERS,
        C1,
        customer(vip=None, updated_at=None),
        "missing field updated_at (absent or null)",
    ),
    (CUSTOMERS, C1, customer(name="n" * 201), "name is 201 characters, more than 200"),
    (ORDERS, O1, order() + b" x", "value has trailing text after the JSON object"),
]

VALID = [
    # The largest and smallest amounts decimal(12,2) holds; trailing zeros are not digits lost.
    (ORDERS, O1, raw("9999999999.99"), ("amount", Decimal("9999999999.99"))),
    (ORDERS, O1, raw("-9999999999.99"), ("amount", Decimal("-9999999999.99"))),
    (ORDERS, O1, raw("1.500"), ("amount", Decimal("1.50"))),
    (ORDERS, O1, raw("7"), ("amount", Decimal("7.00"))),
    # A double takes any JSON number: an integer, a fraction, an exponent.
    (ORDERS, O1, order(weight_kg=3), ("weight_kg", 3.0)),
    (ORDERS, O1, order().replace(b"}", b', "weight_kg": 2.5e-3}'), ("weight_kg", 0.0025)),
    (ORDERS, O1, order(gift=False), ("gift", False)),
    (ORDERS, O1, order(placed_at=2**63 - 1), ("placed_at", 2**63 - 1)),
    (ORDERS, None, order(note="é" * 500), ("note", "é" * 500)),
    (ORDERS, O1, order(unknown={"ignored": [1]}), ("note", None)),
    (CUSTOMERS, C1, customer(since="2020-02-29"), ("since", date(2020, 2, 29))),
    (CUSTOMERS, C1, customer(vip=True), ("vip", True)),
    (
        CUSTOMERS,
        C1,
        customer(credit_limit=Decimal("999999999999.99")),
        ("credit_limit", Decimal("999999999999.99")),
    ),
    (CUSTOMERS, "ü".encode(), customer(id="ü"), ("id", "ü")),
]


@pytest.fixture(scope="module")
def outcome(spark):
    rows = [(key, value, topic) for topic, key, value, *_ in INVALID + VALID]
    rows.append((C1, None, CUSTOMERS))  # a tombstone
    parsed = parse_declared(raw_frame(spark, rows), CONTRACT, ORDERS, CUSTOMERS, MAX_BYTES)
    return sorted(parsed.collect(), key=lambda row: row.offset)


def test_each_breach_of_each_type_is_a_dead_letter_naming_the_field_and_problem(
    outcome,
) -> None:
    errors = [
        None if row.dead_letter is None else json.loads(row.dead_letter)["error"]
        for row in outcome[: len(INVALID)]
    ]
    assert errors == [expected for *_, expected in INVALID]
    assert {(row.kind, row.stream, row.table) for row in outcome[: len(INVALID)]} <= {
        ("stream", None, None),
        ("table", None, None),
    }


def test_each_types_valid_values_are_typed_as_declared_unchanged(outcome) -> None:
    valid = outcome[len(INVALID) : len(INVALID) + len(VALID)]
    assert [row.dead_letter for row in valid] == [None] * len(VALID)
    got = [
        (name, (row.stream if topic == ORDERS else row.table)[name])
        for row, (topic, _, _, (name, _)) in zip(valid, VALID, strict=True)
    ]
    assert got == [expected for *_, expected in VALID]
    assert [row.kind for row in valid] == ["stream" if t == ORDERS else "table" for t, *_ in VALID]


def test_a_table_record_is_keyed_by_its_text_key_and_a_tombstone_is_valid(outcome) -> None:
    customers = [row for row in outcome if row.kind in ("table", "tombstone")]
    assert [row.table_key for row in customers[-2:]] == ["ü", "c1"]
    tombstone = outcome[-1]
    assert (tombstone.kind, tombstone.error, tombstone.table) == ("tombstone", None, None)
