"""A stream's newest batch against the SLO: its end is Spark's trigger time plus the batch's
duration; a bound is broken only past its value; a batch with no time cannot be shown recent;
the bounds come from the settings' env vars."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from boardstream.settings import Settings
from boardstream.spark.slo import StreamSlo, batch_ended

SLO = StreamSlo(max_batch_age_s=600, max_lag=1_000)
# Began 12:00:00 (as Spark writes it), took 2.5 s.
BATCH = {"timestamp": "2026-11-25T12:00:00.000Z", "batch_duration_ms": 2_500}
ENDED = datetime(2026, 11, 25, 12, 0, 2, 500_000, tzinfo=UTC)


def at(seconds_after_end: float) -> datetime:
    return ENDED + timedelta(seconds=seconds_after_end)


def test_a_batch_ends_its_duration_after_its_trigger_began() -> None:
    assert batch_ended(BATCH) == ENDED
    assert batch_ended({"timestamp": None, "batch_duration_ms": 5}) is None
    assert batch_ended({}) is None


@pytest.mark.parametrize(
    ("age_s", "lag", "breaches"),
    [
        (0, 0, []),
        (600, 1_000, []),  # at both bounds: within them
        (600.001, 1_000, ["age"]),
        (600, 1_001, ["lag"]),
        (3_600, 50_000, ["age", "lag"]),
    ],
)
def test_bounds_are_broken_only_past_their_value(age_s: float, lag: int, breaches: list) -> None:
    found = SLO.evaluate({**BATCH, "max_offsets_behind_latest": lag}, at(age_s))
    assert found == {
        "ended_at": "2026-11-25T12:00:02.500000+00:00",
        "age_s": pytest.approx(age_s, abs=1e-6),
        "lag": lag,
        "breaches": breaches,
        "ok": breaches == [],
    }


def test_a_batch_without_a_time_breaks_the_age_bound() -> None:
    found = SLO.evaluate({"batch_id": 0, "max_offsets_behind_latest": 0}, at(0))
    assert found == {"ended_at": None, "age_s": None, "lag": 0, "breaches": ["age"], "ok": False}


def test_a_clock_behind_the_batch_is_age_zero() -> None:
    assert SLO.evaluate(BATCH, at(-5))["age_s"] == 0.0


def test_the_bounds_are_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert StreamSlo.from_settings(Settings()) == StreamSlo(1_200, 100_000)
    monkeypatch.setenv("BOARDSTREAM_STREAM_MAX_BATCH_AGE_S", "90")
    monkeypatch.setenv("BOARDSTREAM_STREAM_MAX_LAG", "0")
    assert StreamSlo.from_settings(Settings()) == StreamSlo(90, 0)


def test_a_real_time_query_may_report_one_checkpoint_interval_later() -> None:
    """A real-time batch reports its progress only when its interval ends."""
    real_time = {"trigger": "real-time", "interval": "5 minutes"}
    assert SLO.for_query(real_time) == StreamSlo(max_batch_age_s=900, max_lag=1_000)
    assert SLO.for_query(real_time).evaluate(BATCH, at(900))["ok"]
    assert SLO.for_query(real_time).evaluate(BATCH, at(901))["breaches"] == ["age"]
    for details in (None, {}, {"trigger": "processing-time", "interval": "5 minutes"}):
        assert SLO.for_query(details) == SLO
    assert SLO.for_query({"trigger": "real-time", "interval": "5m"}) == SLO  # unreadable


@pytest.mark.parametrize("interval", ["10 minutes", "1 day", "106751991167 days"])
def test_a_claimed_interval_at_most_doubles_the_batch_age(interval: str) -> None:
    """The interval is the lease's word: a lease claiming a day (or the longest interval a
    long holds) must not keep a stream that stopped an hour ago within the bound."""
    claimed = SLO.for_query({"trigger": "real-time", "interval": interval})
    assert claimed == StreamSlo(max_batch_age_s=1_200, max_lag=1_000)
    assert claimed.evaluate(BATCH, at(1_200))["ok"]
    assert claimed.evaluate(BATCH, at(3_600))["breaches"] == ["age"]
