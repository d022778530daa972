"""Resident memory of a process tree, and its peak while a block runs: what the benchmarks that
report memory share."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psutil


def tree_rss(process: psutil.Process) -> int:
    """Resident memory of a process and all its descendants (Spark: the JVM and Python workers)."""
    total = 0
    for each in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # exited between listing and reading
            total += each.memory_info().rss
    return total


@dataclass
class Peak:
    """The highest resident memory seen, in bytes."""

    bytes: int = 0

    @property
    def gib(self) -> float:
        return self.bytes / 2**30


@contextmanager
def peak_rss(interval_s: float = 0.2) -> Iterator[Peak]:
    """This process tree's RSS sampled every ``interval_s`` while the block runs: the block's own
    peak, whatever the process held before."""
    process, peak, stop = psutil.Process(), Peak(), threading.Event()

    def sample() -> None:
        while True:
            peak.bytes = max(peak.bytes, tree_rss(process))
            if stop.wait(interval_s):
                return

    sampler = threading.Thread(target=sample, name="peak-rss", daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        stop.set()
        sampler.join()
