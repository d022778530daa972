"""Durations as people write them on command lines (``500ms``, ``30s``, ``10m``, ``2h``, ``7d``)
and read them in a summary or on a page (``3m05s``)."""

from __future__ import annotations

import re

_UNITS_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")


def parse_ms(text: str) -> int:
    """Milliseconds in ``text``; ValueError naming the accepted forms otherwise."""
    match = PATTERN.match(text)
    if not match:
        raise ValueError(f"expected a duration like 500ms, 30s, 10m, 2h or 7d, got {text!r}")
    return round(float(match.group(1)) * _UNITS_MS[match.group(2)])


def span(seconds: float) -> str:
    """``45s``, ``3m05s``, ``11m``, ``1h05m03s``: the largest unit first, zero seconds left off,
    a fraction of a second dropped."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    tail = f"{secs:02d}s" if secs else ""
    if hours:
        return f"{hours}h{minutes:02d}m{tail}"
    return f"{minutes}m{tail}" if minutes else f"{secs}s"
