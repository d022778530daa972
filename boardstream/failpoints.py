"""Failpoints: named moments where the fault suite can kill a job exactly, not just somewhere.

Random kills rarely land in the narrow window a guarantee depends on (the sink's rows written,
its offsets not yet committed); a failpoint does, every time. ``BOARDSTREAM_FAILPOINTS`` lists
``name@n`` entries (comma-separated): the n-th time this process passes ``failpoint(name)`` it
SIGKILLs its whole process group, as ``kill -9`` of the job would. Unset, as in production, a
failpoint costs one environment lookup.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

ENV = "BOARDSTREAM_FAILPOINTS"
_passes: Counter[str] = Counter()


def armed() -> dict[str, int]:
    """``{name: n}`` from the environment; a malformed entry is an error, not a silent no-op."""
    points = {}
    for entry in filter(None, os.environ.get(ENV, "").split(",")):
        name, _, nth = entry.strip().partition("@")
        if not name or not nth.isdigit() or int(nth) < 1:
            raise ValueError(f"{ENV}: {entry!r} is not NAME@N (N >= 1)")
        points[name] = int(nth)
    return points


def failpoint(name: str) -> None:
    nth = armed().get(name)
    if nth is None:
        return
    _passes[name] += 1
    if _passes[name] == nth:
        os.killpg(os.getpgrp(), signal.SIGKILL)
