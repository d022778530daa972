"""A streaming job's newest batch against the service level "Pipeline health" holds it to: the
batch ended recently enough and left the job few enough offsets behind the latest. A job that
stopped, or one that falls behind its input, is then visible before reconciliation finds it
stalled. Pure: the time is given, so a test can fix it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from boardstream.settings import Settings
from boardstream.spark.triggers import real_time_allowance_ms, real_time_interval_ms


@dataclass(frozen=True)
class StreamSlo:
    """The bounds every streaming job is held to (settings ``stream_max_batch_age_s``,
    ``stream_max_lag``); a value equal to its bound is within it."""

    max_batch_age_s: float
    max_lag: int

    def __post_init__(self) -> None:
        if self.max_batch_age_s <= 0 or self.max_lag < 0:
            raise ValueError(
                f"a stream SLO needs a positive batch age and a lag of at least 0, got "
                f"{self.max_batch_age_s} s and {self.max_lag}"
            )

    @classmethod
    def from_settings(cls, settings: Settings) -> StreamSlo:
        return cls(settings.stream_max_batch_age_s, settings.stream_max_lag)

    def for_query(self, details: Mapping[str, Any] | None) -> StreamSlo:
        """The bounds for a query run as ``details`` say (its lease holder's: trigger and
        interval). A real-time batch reports its progress only when its checkpoint interval
        ends, so its batch age may exceed the bound by one interval, at most doubling it
        (:func:`~boardstream.spark.triggers.real_time_allowance_ms`)."""
        interval_ms = real_time_interval_ms(details or {})
        if not interval_ms:  # not real-time, or an interval unread: the plain bound
            return self
        allowance_ms = real_time_allowance_ms(interval_ms, self.max_batch_age_s * 1000)
        return replace(self, max_batch_age_s=self.max_batch_age_s + allowance_ms / 1000)

    def lag_breached(self, lag: int) -> bool:
        """Whether ``lag`` offsets behind the latest breaks the bound (the one rule, for a
        progress line's lag and a live stream's counted at the broker alike)."""
        return lag > self.max_lag

    def evaluate(self, batch: dict[str, Any], now: datetime) -> dict[str, Any]:
        """The batch's end, age (seconds) and lag, and the bounds it breaks (``age``, ``lag``).
        A batch with no time breaks the age bound: nothing shows it is recent."""
        ended = batch_ended(batch)
        age_s = None if ended is None else max((now - ended).total_seconds(), 0.0)
        lag = batch.get("max_offsets_behind_latest") or 0
        broken = {
            "age": age_s is None or age_s > self.max_batch_age_s,
            "lag": self.lag_breached(lag),
        }
        breaches = [bound for bound, is_broken in broken.items() if is_broken]
        return {
            "ended_at": ended.isoformat() if ended else None,
            "age_s": age_s,
            "lag": lag,
            "breaches": breaches,
            "ok": not breaches,
        }


def batch_ended(batch: dict[str, Any]) -> datetime | None:
    """When a progress line's batch ended: Spark's ``timestamp`` is when its trigger began."""
    began = batch.get("timestamp")
    if not began:
        return None
    duration = timedelta(milliseconds=batch.get("batch_duration_ms") or 0)
    return datetime.fromisoformat(began) + duration
