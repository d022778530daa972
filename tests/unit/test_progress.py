"""The progress lines of long work (boardstream/progress.py): at most one per interval, with the
share done, the rate and the ETA, and a final line with the total time. The clock is a fake put
in place of the module's ``time`` so every number in a line is exact."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from boardstream import progress
from boardstream.progress import Progress
from tests.fixtures import FakeClock, logged_lines


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock(100.0)
    monkeypatch.setattr(progress, "time", fake)
    return fake


@pytest.fixture
def lines() -> Iterator[list[tuple[str, int]]]:
    with logged_lines(progress.logger, logging.INFO) as captured:
        yield captured


def test_progress_lines_are_logged_as_the_counts_area() -> None:
    assert progress.logger.name == "boardstream.progress.counts"


def test_a_line_at_most_every_interval_then_a_final_one(
    clock: FakeClock, lines: list[tuple[str, int]]
) -> None:
    work = Progress("produce", 2_000, interval_s=2.0)
    clock.now = 101.0
    work.advance(500)
    assert lines == [], "less than an interval since the start"
    clock.now = 102.0
    work.advance(500)
    clock.now = 103.5
    work.advance(1_000)
    assert lines == [("produce: 1,000/2,000 ( 50.0%) 500/s ETA 2s", logging.INFO)]
    clock.now = 104.0
    work.finish()
    assert lines[1:] == [("produce: 2,000/2,000 (100.0%) 500/s done in 4.0s", logging.INFO)]


def test_the_interval_counts_from_the_last_line(
    clock: FakeClock, lines: list[tuple[str, int]]
) -> None:
    work = Progress("scan", 100, interval_s=1.0)
    for now in (101.0, 101.5, 102.0, 102.9, 103.0):
        clock.now = now
        work.advance()
    assert [line for line, _ in lines] == [
        "scan: 1/100 (  1.0%) 1/s ETA 99s",
        "scan: 3/100 (  3.0%) 2/s ETA 65s",
        "scan: 5/100 (  5.0%) 2/s ETA 57s",
    ]


def test_no_share_without_a_total(clock: FakeClock, lines: list[tuple[str, int]]) -> None:
    work = Progress("measure t", 0)
    work.advance(3)
    clock.now = 102.0
    work.finish()
    assert lines == [("measure t: 3/0 2/s done in 2.0s", logging.INFO)]


def test_large_counts_are_grouped(clock: FakeClock, lines: list[tuple[str, int]]) -> None:
    work = Progress("produce", 4_421_280, interval_s=0)
    clock.now = 110.0
    work.advance(1_234_567)
    assert lines == [("produce: 1,234,567/4,421,280 ( 27.9%) 123,457/s ETA 26s", logging.INFO)]


def test_counts_and_rate_are_readable_as_attributes(clock: FakeClock) -> None:
    work = Progress("x", 10)
    work.advance()
    work.advance(4)
    clock.now = 102.5
    assert (work.done, work.elapsed_s, work.rate) == (5, 2.5, 2.0)


def test_the_rate_at_the_first_instant_does_not_divide_by_zero(clock: FakeClock) -> None:
    work = Progress("x", 10)
    work.advance(0)
    assert work.rate == 0.0
