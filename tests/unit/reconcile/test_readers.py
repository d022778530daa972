"""The table read is type-strict: a value of another type than its column's is reported with
its row and nulled, never coerced back (pure Python, no database)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pyarrow as pa

from boardstream.reconcile.reads.readers import TableRead, TypeMismatch, _strict, held, in_process
from boardstream.reconcile.reads.snapshot import JobProgress, Snapshot
from boardstream.settings import Settings


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


def test_a_full_run_is_held_in_the_driver_up_to_the_limit_inclusive() -> None:
    """Records from each partition's earliest offset (0 where none is listed: a partition
    retention has not touched) to its latest, plus the table's rows."""
    snapshot = Snapshot(
        datetime(2026, 11, 29, tzinfo=UTC),
        {"board": {0: 5}},
        {"board": {0: 8, 1: 4}, "member": {0: 2}},
        JobProgress(0, {}),
        JobProgress(0, {}),
    )
    table = TableRead(pa.table({"board_id": ["a", "b"]}), [])
    assert snapshot.records() == 3 + 4 + 2
    assert held(snapshot, table) == 11
    limits = {
        limit: in_process(Settings(reconcile_in_process_max_records=limit), snapshot, table)
        for limit in (0, 10, 11)
    }
    assert limits == {0: False, 10: False, 11: True}
