"""Window and session semantics on hand-made out-of-order sequences, exact outcomes."""

from __future__ import annotations

import re

import pytest

from boardstream.aggregations.event_time import (
    FINAL,
    UPDATES,
    Result,
    Sessions,
    SessionSpec,
    Windows,
    WindowSpec,
)
from boardstream.errors import InvalidOptionError


def rows(*events: tuple[str, int]) -> list[tuple[str, int, int, int]]:
    return [(group, at, 0, offset) for offset, (group, at) in enumerate(events)]


def test_window_counts_on_time_within_grace_and_too_late() -> None:
    windows = Windows(WindowSpec(size_ms=10, grace_ms=5, retention_ms=30, emit=FINAL))
    out, late = windows.apply(rows(("a", 1), ("a", 12), ("a", 8), ("a", 14)))
    assert out == [] and late == []  # stream time 14: [0,10) closes at 15
    out, late = windows.apply(rows(("a", 16), ("a", 9)))  # 9 arrives after [0,10) closed
    assert out == [Result("a", 0, 10, 2, True)]
    assert [(x.event_ms, x.stream_ms) for x in late] == [(9, 16)]
    out, late = windows.apply(rows(("b", 26)))  # [10,20) closes at 25
    assert out == [Result("a", 10, 20, 3, True)] and windows.clock.late == 1
    assert sorted(windows.rows()) == [("a", 0, 2, True), ("a", 10, 3, True), ("b", 20, 1, False)]
    windows.apply(rows(("b", 41)))
    assert sorted(windows.windows) == [("b", 20), ("b", 40)]  # [0,10), [10,20): past 30 ms


def test_window_updates_emit_every_change() -> None:
    windows = Windows(WindowSpec(size_ms=10, grace_ms=0, retention_ms=10, emit=UPDATES))
    out, _ = windows.apply(rows(("a", 1), ("a", 2)))
    assert out == [Result("a", 0, 10, 2, False)]
    out, _ = windows.apply(rows(("a", 11)))
    assert out == [Result("a", 10, 20, 1, False)]


def test_sessions_merge_a_late_event_and_close_after_gap_and_grace() -> None:
    sessions = Sessions(SessionSpec(gap_ms=10, grace_ms=20, retention_ms=100))
    out, late = sessions.apply(rows(("m", 0), ("m", 25), ("m", 5)))  # 5: late, within grace
    assert out == [] and late == []
    assert sorted(sessions.rows()) == [("m", 0, 5, 2, False), ("m", 25, 25, 1, False)]
    out, late = sessions.apply(rows(("m", 15)))  # bridges both: one session 0..25
    assert sorted(sessions.rows()) == [("m", 0, 25, 4, False)] and late == []
    out, late = sessions.apply(rows(("m", 54)))
    assert out == []  # closes at 25 + 10 + 20 = 55
    out, late = sessions.apply(rows(("m", 55)))
    assert out == [Result("m", 0, 25, 4, True)]
    out, late = sessions.apply(rows(("m", 30)))  # would merge into the closed session
    assert [x.event_ms for x in late] == [30] and sessions.clock.late == 1
    assert sorted(sessions.rows()) == [("m", 0, 25, 4, True), ("m", 54, 55, 2, False)]
    sessions.apply(rows(("m", 125)))  # past 25 + 100 ms of retention: the closed one is gone
    assert sorted(sessions.rows()) == [("m", 54, 55, 2, True), ("m", 125, 125, 1, False)]


@pytest.mark.parametrize(
    ("spec", "values", "message"),
    [
        (WindowSpec, (0, 0, 10), "size must be > 0"),
        (WindowSpec, (10, -1, 10), "grace must be >= 0"),
        (WindowSpec, (10, 5, 14), "retention (14 ms) must be at least size + grace (15 ms)"),
        (SessionSpec, (10, 5, 14), "retention (14 ms) must be at least gap + grace (15 ms)"),
    ],
)
def test_bad_specs_are_refused(spec, values: tuple, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=re.escape(message)):
        spec(*values)


def test_a_backlog_read_partition_after_partition_is_not_late() -> None:
    """Partition 0's newer records first, then partition 1's older ones, in one batch: stream
    time is the slower partition's, so nothing is late and windows close once both passed."""
    windows = Windows(WindowSpec(size_ms=10, grace_ms=0, retention_ms=10))
    batch = [("a", 100, 0, 0), ("a", 105, 0, 1), ("a", 3, 1, 0), ("a", 12, 1, 1)]
    out, late = windows.apply(batch)
    assert late == [] and windows.clock.stream_ms == 12
    assert out == [Result("a", 0, 10, 1, True)]  # [10,20) and [100,110) still open
    out, late = windows.apply([("a", 111, 1, 2), ("a", 112, 0, 2)])
    assert [(r.start_ms, r.count) for r in out] == [(10, 1), (100, 2)]
    out, late = windows.apply([("a", 5, 2, 0)])  # a new partition's old record: [0,10) was final
    assert out == [] and [x.event_ms for x in late] == [5]
