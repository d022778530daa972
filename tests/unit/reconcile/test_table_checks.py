"""The name a ``board_detail`` row with a NULL board id is reported under (SQLite admits one
into a text primary key; the checks name it rather than lose it). Everything else in the module
builds Spark columns (no session in this tier): the per-board frame and the drilled rows are
checked against a real table in tests/adversarial/test_table_tampering.py."""

from __future__ import annotations

from boardstream.reconcile.checks.table_checks import NULL_BOARD_ID


def test_a_null_board_id_is_reported_under_its_own_name() -> None:
    assert NULL_BOARD_ID == "(null board_id)"
