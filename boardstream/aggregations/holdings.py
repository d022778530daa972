"""Which value an entity holds now, and how the per-value counts change when that changes: the
retraction a Kafka Streams ``KTable.groupBy(...).count()`` does with its subtractor.

``arrival`` order: the record that arrives last in its partition wins (a key-value store).
``event-time`` order: the record with the newest event time wins, ties to the later offset (a
versioned store), so a late, older record cannot overwrite a newer one; a deletion is kept as a
marker for the same reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

ARRIVAL, EVENT_TIME = "arrival", "event-time"
ORDERS = (ARRIVAL, EVENT_TIME)


@dataclass(frozen=True)
class Holding:
    value: str | None  # None: deleted
    event_ms: int
    offset: int


def supersedes(candidate: Holding, current: Holding | None, order: str) -> bool:
    if current is None or order == ARRIVAL:
        return True
    return (candidate.event_ms, candidate.offset) >= (current.event_ms, current.offset)


def retarget(
    current: Holding | None, candidate: Holding, order: str, counts: Counter[str]
) -> Holding | None:
    """The entity's holding after ``candidate``; ``counts`` receives the changes (-1 for the
    value it left, +1 for the one it took)."""
    if not supersedes(candidate, current, order):
        return current
    if current is not None and current.value is not None:
        counts[current.value] -= 1
    if candidate.value is not None:
        counts[candidate.value] += 1
    return candidate
