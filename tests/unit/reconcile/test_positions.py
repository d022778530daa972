"""The join's outcomes and the holders of a source position, in the order the balance, its
equations and the health page's stacked bars follow. Everything else in the module builds Spark
columns (no session in this tier): the position checks run against a real stack in
tests/integration/test_reconcile.py and tests/adversarial/test_topic_tampering.py."""

from __future__ import annotations

from boardstream.reconcile.checks.positions import HOLDERS, OUTCOMES
from boardstream.reconcile.checks.spark_checks import BALANCE


def test_the_outcomes_and_holders_in_order() -> None:
    assert OUTCOMES == ("joined", "unmatched", "dead_lettered", "pending")
    assert HOLDERS == ("source", "joined", "unmatched", "dead_lettered", "pending")


def test_the_outcomes_are_the_balance_between_not_yet_read_and_missing() -> None:
    assert BALANCE[BALANCE.index("not_yet_read") + 1 : BALANCE.index("missing")] == OUTCOMES
