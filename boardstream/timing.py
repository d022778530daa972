"""Phase timing lines for long, multi-step work (reconciliation): what took how long."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psutil

logger = logging.getLogger(__name__)


@contextmanager
def phase(label: str) -> Iterator[None]:
    """Log ``label`` when it starts and how long it took when it ends (INFO: progress, not
    trouble, so a task log never shows it as an error)."""
    began = time.perf_counter()
    logger.info("%s ...", label)
    yield
    logger.info("%s: %.1fs", label, time.perf_counter() - began)


def peak_memory_line() -> str:
    """This driver's peak resident memory (the kernel's high-water mark, VmHWM) and that of the
    Spark JVM beside it: spark-submit's, this process's parent, or the gateway this process
    started. A run's memory bound (docs/SETTINGS.md) checked against what it took."""
    me = psutil.Process()
    jvms = [p for p in [me.parent(), *me.children()] if p is not None and _is_java(p)]
    parts = [f"Python driver {_peak_gib(me):.2f} GiB"]
    parts += [f"Spark JVM {_peak_gib(jvm):.2f} GiB" for jvm in jvms]
    return "peak resident memory: " + ", ".join(parts)


def _is_java(process: psutil.Process) -> bool:
    try:
        return process.name() == "java"
    except psutil.Error:
        return False


def _peak_gib(process: psutil.Process) -> float:
    """VmHWM from /proc (Linux); the current RSS where it cannot be read."""
    try:
        with open(f"/proc/{process.pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 2**30
        return process.memory_info().rss / 2**30
    except (OSError, psutil.Error):
        return 0.0
