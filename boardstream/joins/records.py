"""The join's rows by name: what the processor receives, keeps in state and emits.

Each record is a NamedTuple in the column order of its :mod:`boardstream.joins.schema` layout
(a unit test holds them equal), so rows still travel to and from Spark as plain tuples while
the join's code reads ``board.created_ts`` rather than ``board[3]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class InputRow(NamedTuple):
    """One parsed, valid record of either input topic (schema.INPUT)."""

    kind: str  # "member", "tombstone" or "board"
    member_id: int
    event_ms: int
    timestamp_ms: int
    partition: int
    offset: int
    board_id: str | None
    title: str | None
    body: str | None
    created_ts: int | None
    nickname: str | None
    city: str | None
    phone: str | None
    created_at: str | None
    modified_at: str | None


class Version(NamedTuple):
    """A member version: the profile plus where it came from (schema.MEMBER)."""

    nickname: str | None
    city: str | None
    phone: str | None
    created_at: str | None
    modified_at: str | None
    valid_from_ms: int
    partition: int
    offset: int
    deleted: bool


class WaitingBoard(NamedTuple):
    """A board waiting for its member (schema.PENDING)."""

    board_id: str
    title: str | None
    body: str | None
    created_ts: int
    created_at: str | None
    modified_at: str | None
    partition: int
    offset: int
    timestamp_ms: int
    arrived_ms: int


class OutputRow(NamedTuple):
    """A board's outcome: joined with a member version, or unmatched with a reason
    (schema.OUTPUT)."""

    outcome: str
    reason: str | None
    board_id: str
    member_id: int
    nickname: str | None
    city: str | None
    phone: str | None
    title: str | None
    body: str | None
    created_ts: int
    created_at: str | None
    modified_at: str | None
    member_modified_at: str | None
    board_partition: int
    board_offset: int
    board_timestamp_ms: int
    member_partition: int | None
    member_offset: int | None


@dataclass(slots=True)
class Entry:
    """What the join holds for one member id: its versions (oldest first; one in latest mode),
    when it was deleted (if its last record was a tombstone), and the boards waiting for it
    (oldest first)."""

    versions: list[Version] = field(default_factory=list)
    deleted_at_ms: int | None = None
    waiting: list[WaitingBoard] = field(default_factory=list)
