"""The capacity search (bench/capacity.py) against systems of known capacity: it must find the
rate within its resolution, never report a rate the producer did not offer, and say when a
rate is only a lower bound."""

from __future__ import annotations

import sys

import pytest

from boardstream.settings import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "bench"))
from capacity import Step, search


def system(capacity: float, producer: float = float("inf")):
    """A system that sustains any rate up to ``capacity``, fed by a producer that sends at most
    ``producer`` boards/s; the rates it was asked to hold."""
    asked: list[float] = []

    def hold(rate: float) -> Step:
        asked.append(rate)
        achieved = min(rate, producer)
        late = achieved > capacity
        return Step(rate, achieved, 1_000, 1_000, 5_000.0 if late else 200.0)

    return hold, asked


@pytest.mark.parametrize("capacity", [1_500.0, 6_000.0, 23_000.0])
def test_finds_the_capacity_within_its_resolution(capacity: float) -> None:
    hold, asked = system(capacity)
    found = search(hold, start=4_000, ceiling=256_000, resolution=0.1)
    assert found.rate is not None and found.rate <= capacity
    failed = min(step.rate for step in found.steps if not step.sustained)
    assert capacity < failed <= found.rate * 1.1
    assert not found.at_least and found.note == ""
    assert asked[:2] == [4_000, 8_000 if capacity >= 4_000 else 2_000]


def test_a_producer_short_of_the_rate_ends_the_search_with_a_lower_bound() -> None:
    hold, asked = system(capacity=50_000, producer=9_000)
    found = search(hold, start=4_000, ceiling=256_000)
    assert asked == [4_000, 8_000, 16_000]
    assert (found.rate, found.at_least) == (9_000, True)
    assert found.note == "the producer reached 9,000 of 16,000 boards/s"


def test_a_system_that_sustains_the_ceiling_is_a_lower_bound() -> None:
    hold, asked = system(capacity=1e9)
    found = search(hold, start=1_000, ceiling=4_000)
    assert asked == [1_000, 2_000, 4_000]
    assert (found.rate, found.at_least) == (4_000, True)


def test_a_lost_board_fails_a_step_whatever_its_latency() -> None:
    assert not Step(1_000, 1_000, 1_000, 999, 10.0).sustained
    assert not Step(1_000, 1_000, 0, 0, None).sustained
    assert Step(1_000, 1_000, 1_000, 1_000, 1_000.0).sustained
