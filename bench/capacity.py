"""The highest rate a system sustains, found by trying rates: a latency figure says little
without the load a system can carry (issue #51).

A step holds one rate for a while; it is sustained when every board sent came out and the p99
of board to output stayed within the bound (1 s). Rates double from a start until a step fails,
then the gap between the best sustained rate and the lowest failed one is halved until it is
within ``resolution``. The rate recorded is the one the producer achieved, not the one asked
for: on a shared machine the producer may fall short, and then the search says so and stops
rather than report a rate nobody offered. Pure: the step is given, so a test can fake it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

P99_BOUND_MS = 1_000.0
# A producer that sent less than this share of the rate asked for did not offer that rate.
OFFERED_SHARE = 0.95


@dataclass
class Step:
    rate: float  # boards/s asked for
    achieved: float  # boards/s the producer sent
    sent: int
    received: int
    p99_ms: float | None

    @property
    def sustained(self) -> bool:
        return (
            self.received == self.sent and self.p99_ms is not None and self.p99_ms <= P99_BOUND_MS
        )


@dataclass
class Capacity:
    rate: float | None = None  # the highest achieved rate sustained; None: not even the first
    steps: list[Step] = field(default_factory=list)
    note: str = ""
    at_least: bool = False  # the search stopped short of a failure: the rate is a lower bound


def search(
    hold: Callable[[float], Step],
    start: float,
    ceiling: float,
    resolution: float = 0.15,
    max_steps: int = 9,
) -> Capacity:
    """Hold rates from ``start`` (doubling, at most ``ceiling``), then bisect, until the best
    sustained rate and the lowest failed one are within ``resolution`` of each other."""
    found, rate = Capacity(), start
    failed: float | None = None
    for _ in range(max_steps):
        step = hold(rate)
        found.steps.append(step)
        if step.sustained:
            found.rate = max(found.rate or 0.0, step.achieved)
            if step.achieved < rate * OFFERED_SHARE:
                found.note = f"the producer reached {step.achieved:,.0f} of {rate:,.0f} boards/s"
                found.at_least = True
                return found
        else:
            failed = rate if failed is None else min(failed, rate)
        if failed is None:
            if rate >= ceiling:
                found.note = f"sustained the ceiling of the search, {ceiling:,.0f} boards/s"
                found.at_least = True
                return found
            rate = min(rate * 2, ceiling)
        elif found.rate is None:
            rate = failed / 2
        elif failed / found.rate <= 1 + resolution:
            return found
        else:
            rate = (found.rate + failed) / 2
    found.note = f"stopped after {max_steps} steps"
    return found
