"""Phase timing lines (boardstream/timing.py): a start line and a line with the elapsed time,
both at INFO (progress, not trouble). The clock is a fake put in place of the module's ``time``
so the elapsed time is exact."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from boardstream import timing
from tests.fixtures import FakeClock, logged_lines


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock(50.0)
    monkeypatch.setattr(timing, "time", fake)
    return fake


@pytest.fixture
def lines() -> Iterator[list[tuple[str, int]]]:
    with logged_lines(timing.logger, logging.DEBUG) as captured:
        yield captured


def test_a_phase_logs_its_start_and_its_duration(
    clock: FakeClock, lines: list[tuple[str, int]]
) -> None:
    with timing.phase("read the topics"):
        assert lines == [("read the topics ...", logging.INFO)]
        clock.now = 62.34
    assert lines[1:] == [("read the topics: 12.3s", logging.INFO)]


def test_phases_nest(clock: FakeClock, lines: list[tuple[str, int]]) -> None:
    with timing.phase("outer"):
        clock.now = 51.0
        with timing.phase("inner"):
            clock.now = 51.25
        clock.now = 53.0
    assert [line for line, _ in lines] == ["outer ...", "inner ...", "inner: 0.2s", "outer: 3.0s"]


def test_an_error_in_a_phase_propagates(clock: FakeClock, lines: list[tuple[str, int]]) -> None:
    with pytest.raises(KeyError, match="missing"), timing.phase("check"):
        raise KeyError("missing")
    assert lines[0] == ("check ...", logging.INFO)


def test_the_lines_are_boardstreams_own() -> None:
    assert timing.logger.name == "boardstream.timing"
