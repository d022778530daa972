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
Entries and rows are tuples in the column orders of :mod:`boardstream.joins.schema`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from boardstream.errors import InvalidOptionError
from boardstream.joins import schema

LATEST, AS_OF = "latest", "as-of"
MISSING, DELETED, OVERFLOW = "member_missing", "member_deleted", "pending_overflow"

_IN = {name: i for i, name in enumerate(schema.names(schema.INPUT))}
_KIND, _MEMBER_ID, _EVENT, _TS, _PART, _OFFSET = (
    _IN[c] for c in ("kind", "member_id", "event_ms", "timestamp_ms", "partition", "offset")
)
_BOARD_ID, _TITLE, _BODY, _CREATED_TS = (
    _IN[c] for c in ("board_id", "title", "body", "created_ts")
)
_PROFILE = [_IN[c] for c in ("nickname", "city", "phone", "created_at", "modified_at")]
_CREATED_AT, _MODIFIED_AT = _IN["created_at"], _IN["modified_at"]
_TABLES_FIRST = {"member": 0, "tombstone": 0, "board": 1}

# Positions inside a member version (schema.MEMBER) and a pending board (schema.PENDING).
V_VALID_FROM, V_PARTITION, V_OFFSET, V_DELETED = 5, 6, 7, 8
P_CREATED_TS, P_ARRIVED = 3, 9


@dataclass(frozen=True)
class JoinOptions:
    mode: str = LATEST
    unmatched_timeout_ms: int = 10 * 60 * 1000
    max_pending_per_member: int = 10_000
    history_retention_ms: int = 7 * 24 * 3600 * 1000  # as-of: history kept behind the newest
    deleted_retention_ms: int = 7 * 24 * 3600 * 1000  # how long a deletion is remembered

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


# An entry: [versions (list of MEMBER tuples, oldest first), deleted_at_ms or None,
#            pending (list of PENDING tuples, oldest first)]
Entry = list[Any]


def _joined(member_id: int, board: tuple, version: tuple) -> tuple:
    return (
        "joined",
        None,
        board[0],
        member_id,
        version[0],
        version[1],
        version[2],
        board[1],
        board[2],
        board[3],
        board[4],
        board[5],
        version[4],
        board[6],
        board[7],
        board[8],
        version[V_PARTITION],
        version[V_OFFSET],
    )


def _unmatched(member_id: int, board: tuple, reason: str) -> tuple:
    return (
        "unmatched",
        reason,
        board[0],
        member_id,
        None,
        None,
        None,
        board[1],
        board[2],
        board[3],
        board[4],
        board[5],
        None,
        board[6],
        board[7],
        board[8],
        None,
        None,
    )


class MemberTable:
    """Applies input rows to member entries and says what to emit."""

    def __init__(self, options: JoinOptions, entries: dict[int, Entry]) -> None:
        self.options = options
        self.entries = entries
        # Whether the entries differ from what was loaded: a batch of boards that all find
        # their member changes nothing, and the state need not be written back.
        self.changed = False

    def apply(self, rows: Iterable[tuple], now_ms: int) -> tuple[list[tuple], bool]:
        """Apply input rows (schema.INPUT tuples); return (output rows, whether a board was
        left pending, which needs a timer at now + timeout)."""
        out: list[tuple] = []
        waiting = False
        touched: set[int] = set()
        for row in sorted(rows, key=lambda r: (r[_TS], _TABLES_FIRST[r[_KIND]], r[_OFFSET])):
            member_id = row[_MEMBER_ID]
            entry = self.entries.get(member_id)
            if entry is None:
                entry = self.entries[member_id] = [[], None, []]
            if row[_KIND] == "board":
                board = (
                    row[_BOARD_ID],
                    row[_TITLE],
                    row[_BODY],
                    row[_CREATED_TS],
                    row[_CREATED_AT],
                    row[_MODIFIED_AT],
                    row[_PART],
                    row[_OFFSET],
                    row[_TS],
                    now_ms,
                )
                version = self._version_for(entry, board[P_CREATED_TS])
                if version is None:
                    entry[2].append(board)
                    waiting = self.changed = True
                    touched.add(member_id)
                else:
                    out.append(_joined(member_id, board, version))
            else:
                self._apply_member(entry, row)
                self._release(member_id, entry, out)
                self.changed = True
        for member_id in touched:
            self._bound(member_id, self.entries[member_id], out)
        self._compact(now_ms)
        return out, waiting

    def expire(self, now_ms: int) -> list[tuple]:
        """Boards that have waited ``unmatched_timeout_ms`` or more leave as unmatched."""
        cutoff = now_ms - self.options.unmatched_timeout_ms
        out: list[tuple] = []
        for member_id, entry in self.entries.items():
            pending = entry[2]
            if not pending or pending[0][P_ARRIVED] > cutoff:
                continue
            reason = DELETED if entry[1] is not None else MISSING
            out.extend(_unmatched(member_id, b, reason) for b in pending if b[P_ARRIVED] <= cutoff)
            entry[2] = [b for b in pending if b[P_ARRIVED] > cutoff]
            self.changed = True
        self._compact(now_ms)
        return out

    def next_expiry_ms(self) -> int | None:
        """When the oldest waiting board times out, if any board waits."""
        arrivals = [entry[2][0][P_ARRIVED] for entry in self.entries.values() if entry[2]]
        return min(arrivals) + self.options.unmatched_timeout_ms if arrivals else None

    # -- members ------------------------------------------------------------------------------

    def _apply_member(self, entry: Entry, row: tuple) -> None:
        deleted = row[_KIND] == "tombstone"
        version = (
            *(row[i] for i in _PROFILE),
            row[_EVENT],
            row[_PART],
            row[_OFFSET],
            deleted,
        )
        entry[1] = row[_TS] if deleted else None
        if self.options.mode == LATEST:
            entry[0] = [] if deleted else [version]
            return
        versions = [v for v in entry[0] if v[V_VALID_FROM] != version[V_VALID_FROM]]
        versions.append(version)
        versions.sort(key=lambda v: v[V_VALID_FROM])
        horizon = versions[-1][V_VALID_FROM] - self.options.history_retention_ms
        older = [v for v in versions if v[V_VALID_FROM] < horizon]
        # Keep the version in force at the retention's edge: boards inside it may need it.
        entry[0] = older[-1:] + [v for v in versions if v[V_VALID_FROM] >= horizon]

    def _version_for(self, entry: Entry, board_event_ms: int) -> tuple | None:
        versions = entry[0]
        if not versions:
            return None
        if self.options.mode == LATEST:
            return versions[-1]
        valid = None
        for version in versions:
            if version[V_VALID_FROM] > board_event_ms:
                break
            valid = version
        return None if valid is None or valid[V_DELETED] else valid

    def _release(self, member_id: int, entry: Entry, out: list[tuple]) -> None:
        """After a member change, join every waiting board that now has a profile."""
        keep = []
        for board in entry[2]:
            version = self._version_for(entry, board[P_CREATED_TS])
            if version is None:
                keep.append(board)
            else:
                out.append(_joined(member_id, board, version))
        entry[2] = keep

    def _bound(self, member_id: int, entry: Entry, out: list[tuple]) -> None:
        excess = len(entry[2]) - self.options.max_pending_per_member
        if excess > 0:
            out.extend(_unmatched(member_id, b, OVERFLOW) for b in entry[2][:excess])
            entry[2] = entry[2][excess:]

    def _compact(self, now_ms: int) -> None:
        """Drop entries that hold nothing, and those of members deleted longer ago than the
        retention with no board waiting: state stays bounded by the live members, the boards
        waiting, and recent deletions."""
        horizon = now_ms - self.options.deleted_retention_ms
        for member_id in [
            m
            for m, (versions, deleted_at, pending) in self.entries.items()
            if not pending
            and ((deleted_at is None and not versions) or (deleted_at or horizon) < horizon)
        ]:
            del self.entries[member_id]
            self.changed = True
