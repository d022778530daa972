"""When a job counts as stalled, and what the finding says: input waits since its first unread
record was written or the job's last committed batch began, whichever is later, and only longer
than the stall age is a stall. Plus the overdue cutoff, and that a job with nothing unread needs
no consumer.
Reading the first unread records from a broker is covered in tests/adversarial/test_liveness.py."""

from __future__ import annotations

from boardstream.reconcile.checks.liveness import (
    Waiting,
    catching_up,
    first_unread,
    overdue_cutoff_ms,
    stalled,
)
from boardstream.reconcile.reads.snapshot import EarlierSnapshot, JobProgress

NOW = 1_800_000_000_000
STALL = 20 * 60 * 1000
JOB = "board-detail-join"


def _progress(began_at_ms: int | None) -> JobProgress:
    return JobProgress(4, {"board": {0: 10}}, began_at_ms)


def _waiting(partition: int, timestamp_ms: int, key: str | None = "b7") -> Waiting:
    return Waiting("board", partition, 10 + partition, key, 1_234_567, timestamp_ms)


def test_input_waiting_longer_than_the_stall_age_is_a_stall() -> None:
    lines = stalled(JOB, _progress(NOW - 7_200_000), [_waiting(0, NOW - 3_600_000)], NOW, STALL)
    assert lines == ["board-detail-join waits at board[0]@10 (key b7, 1,234,567 bytes) for 3,600s"]


def test_the_later_of_the_record_and_the_last_batch_counts() -> None:
    """A job that ran a batch recently has not been stuck on an old record for all its age."""
    recent = _progress(NOW - STALL - 1_000)
    assert stalled(JOB, recent, [_waiting(0, NOW - 86_400_000)], NOW, STALL) == [
        "board-detail-join waits at board[0]@10 (key b7, 1,234,567 bytes) for 1,201s"
    ]
    assert stalled(JOB, _progress(NOW - 1_000), [_waiting(0, NOW - 86_400_000)], NOW, STALL) == []


def test_a_job_that_never_committed_waits_since_the_record() -> None:
    assert stalled(JOB, _progress(None), [_waiting(1, NOW - 1_500_000, None)], NOW, STALL) == [
        "board-detail-join waits at board[1]@11 (key None, 1,234,567 bytes) for 1,500s"
    ]


def test_exactly_the_stall_age_is_not_yet_a_stall() -> None:
    assert stalled(JOB, _progress(None), [_waiting(0, NOW - STALL)], NOW, STALL) == []
    assert stalled(JOB, _progress(None), [_waiting(0, NOW - STALL - 1)], NOW, STALL) == [
        "board-detail-join waits at board[0]@10 (key b7, 1,234,567 bytes) for 1,200s"
    ]


def test_one_line_per_stalled_partition_in_the_given_order() -> None:
    waiting = [
        _waiting(2, NOW - 2_000_000),
        _waiting(0, NOW - 60_000),
        _waiting(1, NOW - 1_300_000),
    ]
    assert stalled("board-detail-sink", _progress(None), waiting, NOW, STALL) == [
        "board-detail-sink waits at board[2]@12 (key b7, 1,234,567 bytes) for 2,000s",
        "board-detail-sink waits at board[1]@11 (key b7, 1,234,567 bytes) for 1,300s",
    ]
    assert stalled(JOB, _progress(None), [], NOW, STALL) == []


def test_a_record_was_written_no_later_than_an_earlier_run_that_held_it() -> None:
    """Its timestamp is its producer's word: stamped in the future, it is taken to have been
    written when an earlier run's snapshot already held it (below that run's end offset)."""
    future = [_waiting(0, NOW + 3_000_000)]  # board[0]@10
    held = EarlierSnapshot(NOW - STALL - 5_000, {"board": {0: 11}})
    assert stalled(JOB, _progress(None), future, NOW, STALL) == []
    assert stalled(JOB, _progress(None), future, NOW, STALL, held) == [
        "board-detail-join waits at board[0]@10 (key b7, 1,234,567 bytes) for 1,205s"
    ]
    not_yet = EarlierSnapshot(NOW - STALL - 5_000, {"board": {0: 10}, "other": {0: 99}})
    assert stalled(JOB, _progress(None), future, NOW, STALL, not_yet) == []
    # An older timestamp than that run stays the record's own; a later batch still counts.
    old = [_waiting(0, NOW - 3_600_000)]
    assert stalled(JOB, _progress(None), old, NOW, STALL, held) == [
        "board-detail-join waits at board[0]@10 (key b7, 1,234,567 bytes) for 3,600s"
    ]
    assert stalled(JOB, _progress(NOW - 1_000), future, NOW, STALL, held) == []


def test_the_overdue_cutoff_is_the_timeout_plus_the_stall_age_ago() -> None:
    assert overdue_cutoff_ms(NOW, 600_000, STALL) == NOW - 1_800_000
    assert overdue_cutoff_ms(NOW, 0, 0) == NOW
    # A join whose last batch began a moment ago fired every timer due: the same cutoff.
    assert overdue_cutoff_ms(NOW, 600_000, STALL, NOW - 1_000) == NOW - 1_800_000


def test_timers_due_after_the_joins_last_batch_began_are_not_overdue() -> None:
    """A stack down for two hours, then up: the join has not run since, so no timer due in
    those hours has had a batch to fire in (#67)."""
    began = NOW - 7_200_000
    assert overdue_cutoff_ms(NOW, 600_000, STALL, began) == began - 600_000


def test_a_join_idle_past_a_stall_age_says_what_its_next_batch_does() -> None:
    counts = {"not_yet_read": 447_027, "pending": 64}
    assert catching_up(_progress(NOW - 7_380_000), NOW, STALL, counts) == (
        "the join's last batch began 2h 3m ago: its next batch reads the 447,027 boards not "
        "yet read and sends each of the 64 pending whose timeout ran out since then to "
        "board-unmatched (not yet overdue)"
    )
    # A join that ran within the stall age, one that never ran, or nothing on its way: silent.
    assert catching_up(_progress(NOW - STALL), NOW, STALL, counts) is None
    assert catching_up(_progress(None), NOW, STALL, counts) is None
    assert catching_up(_progress(NOW - 7_380_000), NOW, STALL, {"pending": 0}) is None


def test_a_job_with_nothing_unread_needs_no_consumer() -> None:
    """No settings are even read (None would fail at the first look) when nothing waits: read
    to the end, past it, or a partition with no records."""
    no_settings = None
    assert first_unread(no_settings, "board", {0: 5, 1: 3}, {0: 5, 1: 2}) == []  # type: ignore[arg-type]
    assert first_unread(no_settings, "board", {}, {0: 0, 1: 0}) == []  # type: ignore[arg-type]
    assert first_unread(no_settings, "board", {0: 9}, {}) == []  # type: ignore[arg-type]


def test_a_real_time_job_may_leave_input_waiting_one_interval_more() -> None:
    """It commits once per checkpoint interval: what its batch under way has read waits."""
    interval = 5 * 60 * 1000
    real_time = JobProgress(4, {"board": {0: 10}}, NOW - 3_600_000, None, interval)
    assert stalled(JOB, real_time, [_waiting(0, NOW - STALL - interval)], NOW, STALL) == []
    assert stalled(JOB, real_time, [_waiting(0, NOW - STALL - interval - 1_000)], NOW, STALL) == [
        "board-detail-join waits at board[0]@10 (key b7, 1,234,567 bytes) for 1,501s"
    ]


def test_a_real_time_interval_never_more_than_doubles_the_stall_age() -> None:
    """The interval is the lease file's word: one forged to a year hides a stall no longer."""
    year = 365 * 86_400_000
    forged = JobProgress(4, {"board": {0: 10}}, NOW - 3_600_000, None, year)
    assert stalled(JOB, forged, [_waiting(0, NOW - 2 * STALL)], NOW, STALL) == []
    assert stalled(JOB, forged, [_waiting(0, NOW - 2 * STALL - 1_000)], NOW, STALL) == [
        "board-detail-join waits at board[0]@10 (key b7, 1,234,567 bytes) for 2,401s"
    ]
