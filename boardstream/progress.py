"""Periodic progress lines with rate and ETA, readable in a terminal and in a task log alike."""

from __future__ import annotations

import time

from boardstream.logs import progress_logger

logger = progress_logger("counts")


class Progress:
    """Call :meth:`advance` as work completes; a line is logged at most every ``interval_s``."""

    def __init__(self, label: str, total: int, interval_s: float = 2.0) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.interval_s = interval_s
        self.started = time.monotonic()
        self._last_line = self.started

    def advance(self, count: int = 1) -> None:
        self.done += count
        now = time.monotonic()
        if now - self._last_line >= self.interval_s:
            self._last_line = now
            self._log(now)

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    @property
    def rate(self) -> float:
        return self.done / max(self.elapsed_s, 1e-9)

    def finish(self) -> None:
        self._log(time.monotonic(), final=True)

    def _log(self, now: float, final: bool = False) -> None:
        elapsed = now - self.started
        rate = self.done / max(elapsed, 1e-9)
        share = f" ({100 * self.done / self.total:5.1f}%)" if self.total else ""
        if final:
            tail = f"done in {elapsed:.1f}s"
        else:
            remaining = (self.total - self.done) / rate if rate > 0 else float("inf")
            tail = f"ETA {remaining:.0f}s"
        line = f"{self.label}: {self.done:,}/{self.total:,}{share} {rate:,.0f}/s {tail}"
        logger.info("%s", line)
