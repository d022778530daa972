"""The join's semantics, in plain Python: a table of members and the boards waiting for them.

Kafka Streams' KStream-KTable join drops a board whose member is unknown. Here such a board
waits in a bounded pending list and is joined when its member arrives; if the member has not
arrived ``unmatched_timeout_ms`` after the board did, the board is emitted as unmatched with a
reason (``member_missing``, ``member_deleted``, or ``pending_overflow`` when one member has too
many boards waiting). Nothing is dropped.

Modes: ``latest`` joins a board with the profile current when it is processed (records applied in
Kafka timestamp order, offset breaking ties, tables before streams on equal timestamps);
``as-of`` with the profile version valid at the board's own event time (``created_ts``), so
out-of-order member updates still give the right answer.

This module knows nothing of Spark: :mod:`boardstream.joins.processor` loads an entry dict from
the state store, calls :meth:`MemberTable.apply` / :meth:`MemberTable.expire`, and saves it.
Entries and rows are the named records of :mod:`boardstream.joins.records`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, get_args

from boardstream.errors import InvalidOptionError
from boardstream.joins.records import Entry, InputRow, OutputRow, Version, WaitingBoard
from boardstream.pipelines import Join

LATEST, AS_OF = get_args(Join.model_fields["mode"].annotation)
# A declaration's defaults (boardstream/pipelines/model.py) are the join's.
_DECLARED = Join()
MISSING, DELETED, OVERFLOW = "member_missing", "member_deleted", "pending_overflow"

# Tables before streams on equal timestamps.
_TABLES_FIRST = {"member": 0, "tombstone": 0, "board": 1}


@dataclass(frozen=True)
class JoinOptions:
    mode: str = _DECLARED.mode
    unmatched_timeout_ms: int = _DECLARED.grace_ms
    max_pending_per_member: int = _DECLARED.max_buffered_per_key
    history_retention_ms: int = _DECLARED.history_retention_ms  # as-of: kept behind the newest
    deleted_retention_ms: int = _DECLARED.deleted_retention_ms  # how long a deletion is kept

    @classmethod
    def of(cls, join: Join, **overrides: Any) -> JoinOptions:
        """A declaration's join (``pipeline.join``), with ``overrides`` (a job's flags)."""
        declared = {
            "mode": join.mode,
            "unmatched_timeout_ms": join.grace_ms,
            "max_pending_per_member": join.max_buffered_per_key,
            "history_retention_ms": join.history_retention_ms,
            "deleted_retention_ms": join.deleted_retention_ms,
        }
        return cls(**(declared | overrides))

    def __post_init__(self) -> None:
        if self.mode not in (LATEST, AS_OF):
            raise InvalidOptionError(
                f"join mode must be {LATEST!r} or {AS_OF!r}, got {self.mode!r}", "join mode"
            )
        for name in (
            "unmatched_timeout_ms",
            "max_pending_per_member",
            "history_retention_ms",
            "deleted_retention_ms",
        ):
            if getattr(self, name) <= 0:
                raise InvalidOptionError(f"{name} must be > 0, got {getattr(self, name)}", name)


# The fields a record copies from another, read by name in one C call each.
_WAITING = attrgetter(*WaitingBoard._fields[:-1])  # a board's fields, but arrived_ms
_PROFILE = attrgetter("nickname", "city", "phone")
_BOARD = attrgetter("title", "body", "created_ts", "created_at", "modified_at")
_BOARD_SOURCE = attrgetter("partition", "offset", "timestamp_ms")
_VERSION = attrgetter(
    "nickname", "city", "phone", "created_at", "modified_at", "event_ms", "partition", "offset"
)
_SOURCE = attrgetter("partition", "offset")
_NO_PROFILE, _NO_SOURCE = (None, None, None), (None, None)


def _outcome(member_id: int, board: WaitingBoard, found: Version | str) -> OutputRow:
    """The board joined with the member version ``found``, or unmatched for the reason
    ``found`` names."""
    joined = isinstance(found, Version)
    return OutputRow(
        "joined" if joined else "unmatched",
        None if joined else found,
        board.board_id,
        member_id,
        *(_PROFILE(found) if joined else _NO_PROFILE),
        *_BOARD(board),
        found.modified_at if joined else None,
        *_BOARD_SOURCE(board),
        *(_SOURCE(found) if joined else _NO_SOURCE),
    )


class MemberTable:
    """Applies input rows to member entries and says what to emit."""

    def __init__(self, options: JoinOptions, entries: dict[int, Entry]) -> None:
        self.options = options
        self.entries = entries
        # Whether the entries differ from what was loaded: a batch of boards that all find
        # their member changes nothing, and the state need not be written back.
        self.changed = False

    def apply(self, rows: Iterable[InputRow], now_ms: int) -> tuple[list[OutputRow], bool]:
        """Apply input rows; return (output rows, whether a board was left waiting, which
        needs a timer at now + timeout)."""
        out: list[OutputRow] = []
        waiting = False
        touched: set[int] = set()
        for row in sorted(rows, key=lambda r: (r.timestamp_ms, _TABLES_FIRST[r.kind], r.offset)):
            member_id = row.member_id
            entry = self.entries.get(member_id)
            if entry is None:
                entry = self.entries[member_id] = Entry()
            if row.kind == "board":
                board = WaitingBoard(*_WAITING(row), now_ms)
                version = self._version_for(entry, board.created_ts)
                if version is None:
                    entry.waiting.append(board)
                    waiting = self.changed = True
                    touched.add(member_id)
                else:
                    out.append(_outcome(member_id, board, version))
            else:
                self._apply_member(entry, row)
                self._release(member_id, entry, out)
                self.changed = True
        for member_id in touched:
            self._bound(member_id, self.entries[member_id], out)
        self._compact(now_ms)
        return out, waiting

    def expire(self, now_ms: int) -> list[OutputRow]:
        """Boards that have waited ``unmatched_timeout_ms`` or more leave as unmatched."""
        cutoff = now_ms - self.options.unmatched_timeout_ms
        out: list[OutputRow] = []
        for member_id, entry in self.entries.items():
            waiting = entry.waiting
            if not waiting or waiting[0].arrived_ms > cutoff:
                continue
            reason = DELETED if entry.deleted_at_ms is not None else MISSING
            out.extend(_outcome(member_id, b, reason) for b in waiting if b.arrived_ms <= cutoff)
            entry.waiting = [b for b in waiting if b.arrived_ms > cutoff]
            self.changed = True
        self._compact(now_ms)
        return out

    def next_expiry_ms(self) -> int | None:
        """When the oldest waiting board times out, if any board waits."""
        arrivals = [e.waiting[0].arrived_ms for e in self.entries.values() if e.waiting]
        return min(arrivals) + self.options.unmatched_timeout_ms if arrivals else None

    # -- members ------------------------------------------------------------------------------

    def _apply_member(self, entry: Entry, row: InputRow) -> None:
        deleted = row.kind == "tombstone"
        version = Version(*_VERSION(row), deleted)
        entry.deleted_at_ms = row.timestamp_ms if deleted else None
        if self.options.mode == LATEST:
            entry.versions = [] if deleted else [version]
            return
        versions = [v for v in entry.versions if v.valid_from_ms != version.valid_from_ms]
        versions.append(version)
        versions.sort(key=lambda v: v.valid_from_ms)
        horizon = versions[-1].valid_from_ms - self.options.history_retention_ms
        older = [v for v in versions if v.valid_from_ms < horizon]
        # Keep the version in force at the retention's edge: boards inside it may need it.
        entry.versions = older[-1:] + [v for v in versions if v.valid_from_ms >= horizon]

    def _version_for(self, entry: Entry, board_event_ms: int) -> Version | None:
        versions = entry.versions
        if not versions:
            return None
        if self.options.mode == LATEST:
            return versions[-1]
        valid = None
        for version in versions:
            if version.valid_from_ms > board_event_ms:
                break
            valid = version
        return None if valid is None or valid.deleted else valid

    def _release(self, member_id: int, entry: Entry, out: list[OutputRow]) -> None:
        """After a member change, join every waiting board that now has a profile."""
        keep = []
        for board in entry.waiting:
            version = self._version_for(entry, board.created_ts)
            if version is None:
                keep.append(board)
            else:
                out.append(_outcome(member_id, board, version))
        entry.waiting = keep

    def _bound(self, member_id: int, entry: Entry, out: list[OutputRow]) -> None:
        excess = len(entry.waiting) - self.options.max_pending_per_member
        if excess > 0:
            out.extend(_outcome(member_id, b, OVERFLOW) for b in entry.waiting[:excess])
            entry.waiting = entry.waiting[excess:]

    def _compact(self, now_ms: int) -> None:
        """Drop entries that hold nothing, and those of members deleted longer ago than the
        retention with no board waiting: state stays bounded by the live members, the boards
        waiting, and recent deletions."""
        horizon = now_ms - self.options.deleted_retention_ms
        for member_id in [
            m
            for m, e in self.entries.items()
            if not e.waiting
            and (
                (e.deleted_at_ms is None and not e.versions)
                or (e.deleted_at_ms or horizon) < horizon
            )
        ]:
            del self.entries[member_id]
            self.changed = True
