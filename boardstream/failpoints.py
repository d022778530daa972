"""Failpoints: named moments where the fault suite can kill a job exactly, not just somewhere.

Random kills rarely land in the narrow window a guarantee depends on (the sink's rows written,
its offsets not yet committed); a failpoint does, every time. ``BOARDSTREAM_FAILPOINTS`` lists
``name@n`` entries (comma-separated): the n-th time this process passes ``failpoint(name)`` it
SIGKILLs its whole process group, as ``kill -9`` of the job would; ``name@n:stop`` SIGSTOPs it
instead, frozen (a swap storm, a long pause) until someone sends SIGCONT, when it goes on from
there. Unset, as in production, a failpoint costs one environment lookup.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

ENV = "BOARDSTREAM_FAILPOINTS"
_passes: Counter[str] = Counter()
_ACTIONS = {"": signal.SIGKILL, "stop": signal.SIGSTOP}


def armed() -> dict[str, tuple[int, signal.Signals]]:
    """``{name: (n, signal)}`` from the environment; a malformed entry is an error, not a
    silent no-op."""
    points = {}
    for entry in filter(None, os.environ.get(ENV, "").split(",")):
        name, _, rest = entry.strip().partition("@")
        nth, _, action = rest.partition(":")
        if not name or not nth.isdigit() or int(nth) < 1 or action not in _ACTIONS:
            raise ValueError(f"{ENV}: {entry!r} is not NAME@N or NAME@N:stop (N >= 1)")
        points[name] = (int(nth), _ACTIONS[action])
    return points


def failpoint(name: str) -> None:
    point = armed().get(name)
    if point is None:
        return
    nth, sent = point
    _passes[name] += 1
    if _passes[name] == nth:
        os.killpg(os.getpgrp(), sent)
