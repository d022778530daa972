"""Which record an entity holds, and the count changes when it moves (Kafka Streams' subtractor):
``arrival`` takes the last record, ``event-time`` the newest (ties to the later offset), and a
deletion is a holding of its own, so an older record cannot bring a deleted entity back."""

from __future__ import annotations

from collections import Counter

import pytest

from boardstream.aggregations.holdings import (
    ARRIVAL,
    EVENT_TIME,
    ORDERS,
    Holding,
    retarget,
    supersedes,
)


def test_the_two_orders() -> None:
    assert ORDERS == ("arrival", "event-time")


def test_event_time_order_keeps_the_newest_and_arrival_the_last() -> None:
    for order, expected in ((ARRIVAL, "old"), (EVENT_TIME, "new")):
        counts: Counter[str] = Counter()
        holding = retarget(None, Holding("new", 20, 0), order, counts)
        holding = retarget(holding, Holding("old", 10, 1), order, counts)
        assert holding.value == expected
        assert +counts == Counter({expected: 1})


@pytest.mark.parametrize(
    ("candidate", "current", "order", "wins"),
    [
        (Holding("a", 5, 0), None, EVENT_TIME, True),  # nothing held yet
        (Holding("a", 5, 0), Holding("b", 9, 9), ARRIVAL, True),  # arrival: always the last
        (Holding("a", 5, 0), Holding("b", 9, 9), EVENT_TIME, False),  # older event time
        (Holding("a", 9, 3), Holding("b", 9, 2), EVENT_TIME, True),  # a tie: the later offset
        (Holding("a", 9, 1), Holding("b", 9, 2), EVENT_TIME, False),
        (Holding("a", 9, 2), Holding("b", 9, 2), EVENT_TIME, True),  # the same record again
        (Holding(None, 10, 0), Holding("b", 9, 5), EVENT_TIME, True),  # a newer deletion
    ],
)
def test_supersedes(candidate: Holding, current: Holding | None, order: str, wins: bool) -> None:
    assert supersedes(candidate, current, order) is wins


def test_a_move_retracts_the_old_value_and_counts_the_new() -> None:
    counts: Counter[str] = Counter({"seoul": 2})
    held = retarget(Holding("seoul", 1, 0), Holding("busan", 2, 1), ARRIVAL, counts)
    assert held == Holding("busan", 2, 1)
    assert counts == Counter({"seoul": 1, "busan": 1})


def test_a_deletion_only_retracts_and_is_held_as_a_marker() -> None:
    counts: Counter[str] = Counter()
    held = retarget(None, Holding("seoul", 1, 0), EVENT_TIME, counts)
    held = retarget(held, Holding(None, 5, 1), EVENT_TIME, counts)
    assert held == Holding(None, 5, 1)
    assert counts == Counter({"seoul": 0})
    # A late, older record does not resurrect the deleted entity...
    assert retarget(held, Holding("busan", 3, 2), EVENT_TIME, counts) is held
    assert counts == Counter({"seoul": 0})
    # ...while a newer one does, and nothing is retracted for the deletion itself.
    held = retarget(held, Holding("busan", 6, 3), EVENT_TIME, counts)
    assert counts == Counter({"seoul": 0, "busan": 1})


def test_a_record_that_loses_changes_no_count() -> None:
    counts: Counter[str] = Counter({"seoul": 1})
    current = Holding("seoul", 10, 4)
    assert retarget(current, Holding("busan", 9, 5), EVENT_TIME, counts) is current
    assert counts == Counter({"seoul": 1})
