"""The table read is type-strict: a value of another type than its column's is reported with
its row and nulled, never coerced back; a value SQLite keeps in another form (a boolean, a date,
a decimal) is read back exactly or refused (pure Python, no database)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pyarrow as pa
import pytest

from boardstream.reconcile.reads.strict import TypeMismatch, arrow_type, strict


def test_a_column_of_the_right_type_is_untouched() -> None:
    values = [1, 2, None, 2**63 - 1, -(2**63)]
    assert strict(values, ["a", "b", "c", "d", "e"], "member_id", "bigint") == []
    assert values == [1, 2, None, 2**63 - 1, -(2**63)]
    texts = ["x", None, ""]
    assert strict(texts, ["a", "b", "c"], "title", "string") == []


def test_values_of_another_type_are_reported_and_nulled() -> None:
    values = [1, "abc", 2.0, Decimal(3), True, None]
    ids = ["a", "b", "c", "d", "e", "f"]
    found = strict(values, ids, "member_id", "bigint")
    assert found == [
        (1, TypeMismatch("b", "member_id", "'abc'")),
        (2, TypeMismatch("c", "member_id", "2.0")),
        (3, TypeMismatch("d", "member_id", "Decimal('3')")),
        (4, TypeMismatch("e", "member_id", "True")),
    ]
    assert values == [1, None, None, None, None, None]


def test_an_int_column_out_of_its_range_is_a_mismatch() -> None:
    values = [0, 2**31]
    assert strict(values, ["a", "b"], "board_partition", "int") == [
        (1, TypeMismatch("b", "board_partition", str(2**31)))
    ]
    assert values == [0, None]


def test_a_number_in_a_text_column_is_a_mismatch() -> None:
    values = ["x", 5]
    assert strict(values, ["a", "b"], "city", "string") == [(1, TypeMismatch("b", "city", "5"))]


def test_an_id_of_another_type_names_itself() -> None:
    values = ["a", 7]
    assert strict(values, values, "board_id", "string") == [(1, TypeMismatch("7", "board_id", "7"))]


# (stored value, SQLite?) -> what the read holds; None: a mismatch, nulled.
DECLARED = {
    "decimal(12,2)": [
        ((Decimal("12.30"), False), Decimal("12.30")),
        ((12.3, True), Decimal("12.30")),
        ((7, True), Decimal("7.00")),
        ((12.345, True), None),  # a digit past the scale: no rounding into a passing value
        ((1e9, True), Decimal("1000000000.00")),
        ((1e10, True), None),  # 11 digits before the point of a decimal(12,2)
        ((12.3, False), None),  # PostgreSQL answers a NUMERIC with a Decimal only
        (("12.30", True), None),
        ((float("nan"), True), None),
    ],
    "boolean": [
        ((True, False), True),
        ((1, True), True),
        ((0, True), False),
        ((2, True), None),  # SQLAlchemy's converter would call it True
        (("true", True), None),
        ((1, False), None),
    ],
    "date": [
        ((date(2024, 2, 29), False), date(2024, 2, 29)),
        (("2024-02-29", True), date(2024, 2, 29)),
        (("2023-02-29", True), None),
        (("2024-2-9", True), None),
        (("soon", True), None),
        (("2024-02-29", False), None),
    ],
    "double": [((1.5, True), 1.5), ((2, True), None), (("1.5", False), None)],
}


@pytest.mark.parametrize(
    ("kind", "stored", "sqlite", "read"),
    [
        (kind, stored, sqlite, read)
        for kind, cases in DECLARED.items()
        for (stored, sqlite), read in cases
    ],
)
def test_a_declared_type_is_read_back_exactly_or_refused(
    kind: str, stored: object, sqlite: bool, read: object
) -> None:
    values = [stored]
    found = strict(values, ["o1"], "amount", kind, sqlite)
    assert values == [read]
    assert found == (
        [] if read is not None else [(0, TypeMismatch("o1", "amount", repr(stored)[:60]))]
    )
    if read is not None:  # what the read holds fits the column's Arrow type as it is
        assert pa.array(values, arrow_type(kind)).to_pylist() == [read]


def test_a_decimal_column_reads_into_arrow_at_its_precision_and_scale() -> None:
    assert arrow_type("decimal(14,2)") == pa.decimal128(14, 2)
    assert arrow_type("date") == pa.date32()
