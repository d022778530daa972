"""The table read is type-strict: a value of another type than its column's is reported with
its row and nulled, never coerced back (pure Python, no database)."""

from __future__ import annotations

from decimal import Decimal

from boardstream.reconcile.reads.readers import TypeMismatch, _strict


def test_a_column_of_the_right_type_is_untouched() -> None:
    values = [1, 2, None, 2**63 - 1, -(2**63)]
    assert _strict(values, ["a", "b", "c", "d", "e"], "member_id") == []
    assert values == [1, 2, None, 2**63 - 1, -(2**63)]
    texts = ["x", None, ""]
    assert _strict(texts, ["a", "b", "c"], "title") == []


def test_values_of_another_type_are_reported_and_nulled() -> None:
    values = [1, "abc", 2.0, Decimal(3), True, None]
    ids = ["a", "b", "c", "d", "e", "f"]
    found = _strict(values, ids, "member_id")
    assert found == [
        (1, TypeMismatch("b", "member_id", "'abc'")),
        (2, TypeMismatch("c", "member_id", "2.0")),
        (3, TypeMismatch("d", "member_id", "Decimal('3')")),
        (4, TypeMismatch("e", "member_id", "True")),
    ]
    assert values == [1, None, None, None, None, None]


def test_an_int_column_out_of_its_range_is_a_mismatch() -> None:
    values = [0, 2**31]
    assert _strict(values, ["a", "b"], "board_partition") == [
        (1, TypeMismatch("b", "board_partition", str(2**31)))
    ]
    assert values == [0, None]


def test_a_number_in_a_text_column_is_a_mismatch() -> None:
    values = ["x", 5]
    assert _strict(values, ["a", "b"], "city") == [(1, TypeMismatch("b", "city", "5"))]


def test_a_board_id_of_another_type_names_itself() -> None:
    values = ["a", 7]
    assert _strict(values, values, "board_id") == [(1, TypeMismatch("7", "board_id", "7"))]
