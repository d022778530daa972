"""The verdict on a live stream: each way it can break its SLO, and the figures behind it."""

from __future__ import annotations

import pytest

from boardstream.spark.checkpoint_lease import Holder
from boardstream.spark.slo import StreamSlo
from boardstream.supervision.health import EXECUTOR_GRACE_S, evaluate
from boardstream.supervision.register import STOPPED, Start, StreamRecord
from boardstream.supervision.supervisor import StreamStatus

SINCE = 1_795_600_800_000  # 2026-11-25T10:00:00Z, when the driver took its lease
SLO = StreamSlo(max_batch_age_s=30, max_lag=1_000)
DRIVER = Holder(41, "here", "board-detail-join", SINCE, {"application_id": "app-7"})
STARTED = StreamRecord(starts=(Start(SINCE - 60_000, False, 40), Start(SINCE, True, 41)))


def batch(at: str, lag: int = 0, rate: float = 950.0) -> dict:
    return {"timestamp": at, "max_offsets_behind_latest": lag, "processed_rows_per_s": rate}


def test_lag_is_what_the_checkpoint_has_not_committed_not_what_the_last_batch_saw() -> None:
    """A starved stream runs no batch: its last progress line keeps saying 0 behind while
    records wait; the lag counted at the broker says how many."""
    last = batch("2026-11-25T10:00:05.000Z", lag=0)
    starved = evaluate(running(), last, None, SINCE + 6_000, SLO, behind=5_000)
    assert (starved.lag, starved.lag_breached) == (5_000, True)
    assert starved.reasons == ("5,000 offsets behind the latest (SLO 1,000)",)
    unknown = evaluate(running(), last, None, SINCE + 6_000, SLO, behind=None)
    assert unknown.healthy and (unknown.lag, unknown.lag_breached) == (None, False)


def running(record: StreamRecord = STARTED) -> StreamStatus:
    return StreamStatus("board-detail-join", DRIVER, record)


def test_a_recent_batch_within_the_lag_slo_is_healthy() -> None:
    health = evaluate(
        running(), batch("2026-11-25T10:01:00.000Z"), None, SINCE + 70_000, SLO, behind=1_000
    )
    assert health.healthy and health.reasons == ()
    assert (health.running, health.wanted, health.application_id) == (True, True, "app-7")
    assert (health.uptime_s, health.last_activity_age_s) == (70.0, 10.0)
    assert (health.lag, health.rows_per_s, health.restarts) == (1_000, 950.0, 1)


def test_no_batch_within_the_slo_is_unhealthy_but_an_idle_heartbeat_is_activity() -> None:
    progress = batch("2026-11-25T10:01:00.000Z")
    now = SINCE + 60_000 + 31_000
    stale = evaluate(running(), progress, None, now, SLO)
    assert stale.reasons == ("no batch for 31 s (SLO 30 s)",) and not stale.healthy
    idle = evaluate(running(), progress, SINCE + 80_000, now, SLO)
    assert idle.healthy and idle.last_activity_age_s == 11.0


def test_lag_past_the_slo_is_unhealthy() -> None:
    health = evaluate(
        running(), batch("2026-11-25T10:00:05.000Z"), None, SINCE + 6_000, SLO, behind=1_001
    )
    assert health.reasons == ("1,001 offsets behind the latest (SLO 1,000)",)


def test_a_new_driver_has_the_batch_age_slo_from_its_start_and_ignores_older_batches() -> None:
    before_restart = batch("2026-11-25T09:59:00.000Z", lag=50_000)
    young = evaluate(running(), before_restart, None, SINCE + 20_000, SLO)
    assert young.healthy and young.rows_per_s is None and young.last_activity_age_s == 20.0
    old = evaluate(running(), before_restart, None, SINCE + 40_000, SLO)
    assert old.reasons == ("no batch for 40 s (SLO 30 s)",)


def test_a_stream_wanted_running_that_does_not_run_is_unhealthy() -> None:
    health = evaluate(StreamStatus("board-detail-join", None, STARTED), None, None, SINCE, SLO)
    assert health.reasons == ("not running",) and not health.running
    assert (health.application_id, health.uptime_s, health.lag) == (None, None, None)
    # Its input still waits, counted at the broker: a frozen driver that lost its lease.
    frozen = evaluate(
        StreamStatus("board-detail-join", None, STARTED), None, None, SINCE, SLO, behind=60_000
    )
    assert frozen.reasons == ("not running", "60,000 offsets behind the latest (SLO 1,000)")
    assert (frozen.lag, frozen.lag_breached) == (60_000, True)


def test_a_stream_stopped_on_request_is_not_a_failure() -> None:
    stopped = StreamRecord(STOPPED, STARTED.starts, SINCE + 1)
    health = evaluate(StreamStatus("board-detail-join", None, stopped), None, None, SINCE, SLO)
    assert health.healthy and not health.wanted and not health.running


@pytest.mark.parametrize(("age", "lag"), [(0, 0), (-1, 0), (10, -1)])
def test_a_senseless_slo_is_refused(age: float, lag: int) -> None:
    with pytest.raises(ValueError, match="stream SLO"):
        StreamSlo(age, lag)


def test_only_streams_a_supervisor_started_or_was_asked_to_stop_count_as_supervised() -> None:
    never = StreamStatus("board-detail-join", None, StreamRecord())
    assert not evaluate(never, None, None, SINCE, SLO).supervised
    assert evaluate(running(), None, None, SINCE, SLO).supervised
    asked_only = StreamRecord(STOPPED, (), SINCE)
    assert evaluate(
        StreamStatus("board-detail-join", None, asked_only), None, None, SINCE, SLO
    ).supervised


def test_a_real_time_stream_reports_once_per_checkpoint_interval() -> None:
    """Its batch age may reach the SLO plus its interval, as its lease says it runs; at most
    twice the SLO, whatever interval the lease claims."""
    progress = batch("2026-11-25T10:01:00.000Z")
    for interval, allowed_s in (("20 seconds", 50), ("5 minutes", 60)):
        details = {"application_id": "app-7", "trigger": "real-time", "interval": interval}
        driver = Holder(41, "here", "board-detail-join", SINCE, details)
        status = StreamStatus("board-detail-join", driver, STARTED)
        healthy = evaluate(status, progress, None, SINCE + 60_000 + allowed_s * 1000, SLO)
        assert healthy.healthy and healthy.last_activity_age_s == allowed_s
        late = evaluate(status, progress, None, SINCE + 60_000 + (allowed_s + 1) * 1000, SLO)
        assert late.reasons == (f"no batch for {allowed_s + 1} s (SLO {allowed_s} s)",)


def test_a_stream_with_no_executor_is_unhealthy_once_the_master_had_time_to_grant_one() -> None:
    """Starved of cores (or its workers lost), a driver lives on with its lease and loads
    nothing; it would breach the batch age only much later."""
    recent = batch("2026-11-25T10:00:20.000Z")
    within = SINCE + int(EXECUTOR_GRACE_S * 1000)
    assert evaluate(running(), recent, None, within, SLO, cores_granted=0).healthy
    starved = evaluate(running(), recent, None, within + 1_000, SLO, cores_granted=0)
    assert starved.reasons == ("no executor: the cluster has granted its application 0 cores",)
    for known in (None, 1):  # local mode or a master that does not answer; an executor
        assert evaluate(running(), recent, None, within + 1_000, SLO, cores_granted=known).healthy
