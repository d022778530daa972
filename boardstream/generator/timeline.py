"""When generated records happen, for every pipeline: derived from a start time, never from the
wall clock, so a seed always means the same bytes; every stream record after every row's first
version, so each can be joined with the row as it first was."""

from __future__ import annotations

# 2025-01-01T00:00:00Z.
DEFAULT_START_MS = 1_735_689_600_000
ROW_SPACING_MS = 37_000  # between two rows' first versions
VERSION_STEP_MS = 60_000  # between a row's versions
STREAM_OFFSET_MS = 20_000_000_000  # from the start to the first stream record
RECORD_SPACING_MS = 1_000  # between two stream records, plus up to a second of jitter


def row_created_ms(start_ms: int, row: int) -> int:
    return start_ms + row * ROW_SPACING_MS


def row_version_ms(start_ms: int, row: int, version: int) -> int:
    """When row ``row``'s ``version``-th version (0: its first) was made."""
    return row_created_ms(start_ms, row) + version * VERSION_STEP_MS


def record_ms(start_ms: int, index: int, jitter_ms: int = 0) -> int:
    """The event time of the ``index``-th stream record."""
    return start_ms + STREAM_OFFSET_MS + index * RECORD_SPACING_MS + jitter_ms
