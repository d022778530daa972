"""The waiting boards' lines: age and time left, to the second, oldest first, and the late."""

from __future__ import annotations

from boardstream.reconcile.reads.waiting import waiting_lines

NOW = 1_800_000_000_000
TIMEOUT = 10 * 60 * 1000


def test_age_and_time_left_add_up_to_the_timeout_oldest_first() -> None:
    boards = [("b9", NOW - 4_999), ("b7", NOW - 192_400), ("b1", NOW - 192_400)]
    assert waiting_lines(boards, NOW, TIMEOUT) == [
        "b1: waiting 3m12s, times out in 6m48s",
        "b7: waiting 3m12s, times out in 6m48s",
        "b9: waiting 4s, times out in 9m56s",
    ]


def test_boards_past_the_timeout_say_how_late_their_timer_is() -> None:
    boards = [("b2", NOW - TIMEOUT), ("b3", NOW - TIMEOUT - 65_000), ("b4", NOW - 3_903_000)]
    assert waiting_lines(boards, NOW, TIMEOUT) == [
        "b4: waiting 1h05m03s, timed out 55m03s ago",
        "b3: waiting 11m05s, timed out 1m05s ago",
        "b2: waiting 10m, timed out 0s ago",
    ]


def test_a_clock_behind_the_join_counts_as_no_wait_and_none_is_no_lines() -> None:
    assert waiting_lines([("b5", NOW + 3_000)], NOW, TIMEOUT) == [
        "b5: waiting 0s, times out in 10m"
    ]
    assert waiting_lines([], NOW, TIMEOUT) == []
