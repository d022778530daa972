"""Is a supervised stream healthy: running when wanted, batches recent, lag within its SLO.

Pure: the supervisor's status, the stream's newest progress line and idle heartbeat, the clock
and the SLO in (:mod:`boardstream.spark.slo`, the one Pipeline health holds every job to); a
verdict with its reasons and the figures behind it out, for the watching sensor and the UI page
alike. A stream's activity is the end of its newest batch, its newest idle heartbeat (Spark
reports an idle query every few seconds instead of running empty batches), or its start,
whichever is newest: a stream just started has until the batch-age SLO to report. On a
standalone cluster, a stream whose application holds no executor (0 cores granted: starved by
other applications, or its workers lost) is unhealthy once the master has had
``EXECUTOR_GRACE_S`` to grant it some: it would only breach the batch age later, with its
driver alive and nothing loaded meanwhile. Its lag is counted at the broker now against where
its newest batch ended (:mod:`.lag`), not taken from that batch's own lag figure, which a stream
that runs no batch keeps repeating.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from boardstream.spark.slo import StreamSlo, batch_ended
from boardstream.supervision.register import RUNNING
from boardstream.supervision.supervisor import StreamStatus

# A master grants a registering application its executors within seconds when cores are free;
# this leaves a loaded machine room before an application without any is called starved.
EXECUTOR_GRACE_S = 30.0


@dataclass(frozen=True)
class StreamHealth:
    job: str
    supervised: bool  # a supervisor has started it, or been asked to stop it
    wanted: bool  # the stream is wanted running (not stopped on request)
    running: bool
    healthy: bool
    reasons: tuple[str, ...]
    application_id: str | None
    uptime_s: float | None
    restarts: int
    last_activity_age_s: float | None
    lag: int | None  # records its checkpoint has not committed, counted at the broker
    lag_breached: bool  # that lag breaks the SLO (one of ``reasons``)
    rows_per_s: float | None


def _ended_ms(progress: dict[str, Any]) -> int | None:
    ended = batch_ended(progress)
    return None if ended is None else int(ended.timestamp() * 1000)


def evaluate(
    status: StreamStatus,
    progress: dict[str, Any] | None,
    idle_ms: int | None,
    now_ms: int,
    slo: StreamSlo,
    cores_granted: int | None = None,
    behind: int | None = None,
) -> StreamHealth:
    """The verdict on one stream (``progress``: its newest progress line, if any;
    ``cores_granted``: its application's on a standalone cluster, None when unknown;
    ``behind``: the records its checkpoint has not committed (:mod:`.lag`), None when
    unknown)."""
    wanted = status.record.desired == RUNNING
    owner = status.holder
    batch_ms = _ended_ms(progress) if progress else None
    reasons = []
    age_s = rows = uptime_s = None
    if owner is not None:
        slo = slo.for_query(owner.details)
        uptime_s = max(0.0, (now_ms - owner.since_ms) / 1000)
        since_run = batch_ms if batch_ms is not None and batch_ms >= owner.since_ms else None
        newest = max(t for t in (since_run, idle_ms, owner.since_ms) if t is not None)
        age_s = max(0.0, (now_ms - newest) / 1000)
        if age_s > slo.max_batch_age_s:
            reasons.append(f"no batch for {age_s:,.0f} s (SLO {slo.max_batch_age_s:,.0f} s)")
        if cores_granted == 0 and uptime_s > EXECUTOR_GRACE_S:
            reasons.append("no executor: the cluster has granted its application 0 cores")
        if since_run is not None:
            rows = float(progress["processed_rows_per_s"] or 0.0)
    elif wanted:
        reasons.append("not running")
    # Counted at the broker whether or not a driver runs: a frozen or dead stream's input waits.
    lag = behind
    if lag is not None and slo.lag_breached(lag):
        reasons.append(f"{lag:,} offsets behind the latest (SLO {slo.max_lag:,})")
    return StreamHealth(
        job=status.job,
        supervised=bool(status.record.starts) or status.record.stop_requested_ms is not None,
        wanted=wanted,
        running=owner is not None,
        healthy=not reasons,
        reasons=tuple(reasons),
        application_id=owner.details.get("application_id") if owner else None,
        uptime_s=uptime_s,
        restarts=status.record.restarts,
        last_activity_age_s=age_s,
        lag=lag,
        lag_breached=lag is not None and slo.lag_breached(lag),
        rows_per_s=rows,
    )
