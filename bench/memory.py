"""Resident memory of a process tree, and its peak while a block runs: what the benchmarks that
report memory share."""

from __future__ import annotations

import contextlib
import threading
from types import TracebackType

import psutil


def tree_rss(process: psutil.Process) -> int:
    """Resident memory of a process and all its descendants (Spark: the JVM and Python workers)."""
    total = 0
    for each in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # exited between listing and reading
            total += each.memory_info().rss
    return total


class PeakRss:
    """``with PeakRss() as peak:`` samples this process tree's RSS every ``interval_s`` while the
    block runs; ``peak.bytes`` is the highest sum seen (the block's own peak, whatever the
    process held before)."""

    def __init__(self, interval_s: float = 0.2) -> None:
        self.interval_s = interval_s
        self.bytes = 0
        self._process = psutil.Process()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="peak-rss", daemon=True)

    def _sample(self) -> None:
        while True:
            self.bytes = max(self.bytes, tree_rss(self._process))
            if self._stop.wait(self.interval_s):
                return

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _error: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def gib(self) -> float:
        return self.bytes / 2**30
