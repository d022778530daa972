"""The triggers a boardstream query runs under, by name, and their intervals: a module of its
own so that DAG files can offer them as params without importing Spark at parse time."""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from boardstream.errors import InvalidOptionError


class Trigger(StrEnum):
    """A query's trigger. A str by value, so a DAG param, a lease's details and a message
    carry its name (``available-now``); :meth:`of` reads one, refusing any other word."""

    AVAILABLE_NOW = "available-now"
    PROCESSING_TIME = "processing-time"
    REAL_TIME = "real-time"

    @classmethod
    def of(
        cls, value: str, allowed: tuple[Trigger, ...] | None = None, option: str = "trigger"
    ) -> Trigger:
        """``value`` as a trigger, one of ``allowed`` (all, if None); InvalidOptionError on
        ``option`` naming the choices otherwise."""
        choices = tuple(cls) if allowed is None else allowed
        if value not in choices:
            raise InvalidOptionError(
                f"{option} must be one of {', '.join(choices)}, got {value!r}", option
            )
        return cls(value)


AVAILABLE_NOW, PROCESSING_TIME, REAL_TIME = tuple(Trigger)
TRIGGERS = (AVAILABLE_NOW, PROCESSING_TIME)
# Spark's real-time mode: long-running tasks, records flow through without waiting for a batch
# boundary, and ``interval`` is how often progress is checkpointed (at least 5 s). It runs
# only queries of its allowlisted operators (the join's), in update mode, with a task slot per
# source and shuffle partition at once.
REAL_TIME_TRIGGERS = (*TRIGGERS, REAL_TIME)
# A live stream's micro-batch interval (the join's and the sink's): a board passes both, and at
# 1 s each its p95 from board to row was 5.2 s at 1,000 boards/s, at 500 ms 4.8 s
# (docs/BENCHMARKS.md); an idle join runs an empty batch (its timers) each interval.
LIVE_INTERVAL = "500 milliseconds"

MIN_REAL_TIME_MS = 5_000  # Spark's shortest real-time checkpoint interval
_UNIT_MS = {
    "week": 604_800_000,
    "day": 86_400_000,
    "hour": 3_600_000,
    "minute": 60_000,
    "second": 1_000,
    "millisecond": 1,
    "microsecond": 0.001,
}
_PART = rf"(\d+(?:\.\d+)?) +({'|'.join(_UNIT_MS)})s?"
# An interval as a trigger takes it, spelled as Spark reads it (it lower-cases first): numbers
# and whole unit names, e.g. "500 milliseconds", "1 minute 30 seconds" ("5m" is refused); the
# DAG params' pattern too.
INTERVAL_PATTERN = rf"^(interval +)?{_PART}( +{_PART})*$"


def interval_ms(text: str) -> float:
    """``text`` as a trigger's interval, in milliseconds; ValueError naming the form Spark
    takes otherwise (only seconds may have a fraction)."""
    spelled = " ".join(text.lower().split())
    if not re.match(INTERVAL_PATTERN, spelled):
        raise ValueError(
            "expected an interval like '500 milliseconds', '30 seconds' or '1 minute 30 "
            f"seconds' (numbers and units: {', '.join(_UNIT_MS)}), got {text!r}"
        )
    total = 0.0
    for value, unit in re.findall(_PART, spelled):
        if "." in value and unit != "second":
            raise ValueError(f"only seconds may have a fraction in an interval, got {text!r}")
        total += float(value) * _UNIT_MS[unit]
    return total


def require_interval(trigger: Trigger, interval: str, option: str = "interval") -> None:
    """Refuse (InvalidOptionError on ``option``) an interval Spark would refuse under
    ``trigger`` once started: not in its form, or under 5 seconds for real-time mode."""
    if trigger == AVAILABLE_NOW:
        return  # no interval
    try:
        ms = interval_ms(interval)
    except ValueError as error:
        raise InvalidOptionError(str(error), option) from None
    if trigger == REAL_TIME and ms < MIN_REAL_TIME_MS:
        raise InvalidOptionError(
            f"a real-time checkpoint {option} is at least 5 seconds, got {interval!r}", option
        )


def real_time_interval_ms(details: Mapping[str, Any]) -> int | None:
    """The checkpoint interval a query ran with under the real-time trigger, as its driver's
    details say (its lease: ``trigger``, ``interval``); 0 when that interval cannot be read,
    None under any other trigger. Such a query commits and reports once per interval."""
    if details.get("trigger") != REAL_TIME:
        return None
    try:
        return round(interval_ms(str(details.get("interval"))))
    except ValueError:
        return 0


def real_time_allowance_ms(interval_ms: int | None, bound_ms: float) -> float:
    """How much later than ``bound_ms`` a query may report under the real-time trigger: one
    checkpoint interval (it commits and reports once per interval), at most the bound itself.
    The interval is its lease's word, so a forged one cannot hide a stopped query for more than
    twice the bound (reconciliation's stall age, the streams' batch-age SLO)."""
    return min(interval_ms or 0, bound_ms)
