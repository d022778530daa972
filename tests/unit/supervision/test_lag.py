"""A live stream's lag: records between its committed offsets and the topics' ends."""

from __future__ import annotations

from boardstream.supervision.lag import offsets_behind

STARTS = {"member": {0: 0}, "board": {0: 0, 1: 40}}


def test_committed_partitions_count_to_their_end_and_others_from_their_start() -> None:
    ends = {"member": {0: 7}, "board": {0: 100, 1: 90}}
    committed = {"member": {0: 7}, "board": {0: 60}}  # board[1] never committed
    assert offsets_behind(committed, STARTS, ends) == 0 + 40 + (90 - 40)


def test_a_start_past_the_commit_counts_only_what_is_still_there() -> None:
    """Retention deleted records the stream never read: they no longer wait."""
    ends = {"member": {0: 7}, "board": {0: 100, 1: 90}}
    committed = {"member": {0: 7}, "board": {0: 60, 1: 10}}
    assert offsets_behind(committed, STARTS, ends) == 40 + 50


def test_nothing_committed_is_everything_retained() -> None:
    ends = {"member": {0: 3}, "board": {0: 5, 1: 45}}
    assert offsets_behind({}, STARTS, ends) == 3 + 5 + 5
