"""What the generator produces, in which order: a pure, seeded sequence of Kafka records.

Kept free of any Kafka client so the exact data a seed means can be unit-tested and compared.
The order has four phases, chosen so each join case really happens on the broker:

1. members (all but the late ones), by member id;
2. boards, shuffled, with member updates spread through them, member deletes (tombstones) at
   the halfway point and malformed records spread evenly;
3. the late members, after every board that names them.

Boards of a member deleted in phase 2 that come after its tombstone name a deleted member;
orphan boards name member ids that are never produced.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from boardstream.errors import InvalidOptionError

# 2025-01-01T00:00:00Z: payload times are derived from this, never from the wall clock, so a
# seed always means the same bytes.
DEFAULT_START_MS = 1_735_689_600_000
PRODUCTION_MEMBERS = 442_128
PRODUCTION_BOARDS = 447_017
OVERSIZED_BODY_BYTES = 300_000

CITIES = ("Seoul", "Busan", "Incheon", "Daegu", "Daejeon", "Gwangju", "Suwon", "Ulsan", "Jeju")
NICK_PARTS = ("blue", "quiet", "swift", "lucky", "brave", "tiny", "sunny", "misty", "red", "wild")
WORDS = (
    "kafka",
    "stream",
    "table",
    "join",
    "spark",
    "state",
    "board",
    "member",
    "post",
    "reply",
    "review",
    "city",
    "weekend",
    "market",
    "coffee",
    "train",
    "river",
    "photo",
    "notice",
    "question",
    "answer",
    "update",
    "price",
    "free",
    "used",
    "sale",
    "trade",
)
MALFORMED_KINDS = ("not_json", "wrong_type", "missing_key_field", "member_id_text", "oversized")


@dataclass(frozen=True)
class GeneratorOptions:
    members: int = 1_000
    boards: int = 1_000
    seed: int = 42
    update_ratio: float = 0.0
    deletes: int = 0
    late_members: int = 0
    orphans: int = 0
    malformed: int = 0
    start_ms: int = DEFAULT_START_MS

    def __post_init__(self) -> None:
        """Refuse, on construction, the first option that cannot be satisfied."""
        for name in ("members", "boards", "deletes", "late_members", "orphans", "malformed"):
            words = name.replace("_", " ")
            if getattr(self, name) < 0:
                raise InvalidOptionError(f"{words} must be >= 0", words)
        if not 0 <= self.update_ratio <= 100:
            raise InvalidOptionError("update ratio must be between 0 and 100", "update ratio")
        if self.late_members + self.deletes > self.members:
            raise InvalidOptionError(
                "late members plus deletes cannot exceed members",
                "late members",
                "deletes",
                "members",
            )
        if self.late_members + self.orphans > self.boards:
            raise InvalidOptionError(
                "late members plus orphans cannot exceed boards "
                "(each late member and each orphan needs a board of its own)",
                "late members",
                "orphans",
                "boards",
            )


def production_scale() -> dict[str, int]:
    """The member and board counts of the production data set this project is sized for."""
    return {"members": PRODUCTION_MEMBERS, "boards": PRODUCTION_BOARDS}


@dataclass(frozen=True)
class PlannedRecord:
    """One record to produce. ``kind`` names the manifest bucket it belongs to."""

    topic: str  # "member" or "board": the logical topic, mapped to a name by the producer
    key: bytes
    value: bytes | None
    kind: str
    member_id: int | None = None


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _dumps(payload: dict) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


class Plan:
    """Iterate to get the records; :attr:`size` says how many there will be."""

    def __init__(self, options: GeneratorOptions) -> None:
        self.options = options
        self.rng = random.Random(options.seed)
        rng, o = self.rng, options
        ids = list(range(1, o.members + 1))
        picked = rng.sample(ids, o.late_members + o.deletes)
        self.late_ids = sorted(picked[: o.late_members])
        self.deleted_ids = sorted(picked[o.late_members :])
        self.updates = round(o.update_ratio * o.members)
        # Updates go to members that exist for the whole board phase: an update of a late
        # member would make it early, one of a deleted member would bring it back.
        excluded = set(picked)
        self.updatable = [i for i in ids if i not in excluded]
        if self.updates and not self.updatable:
            raise InvalidOptionError(
                "update ratio needs members that are neither late nor deleted", "update ratio"
            )
        self.size = o.members + o.boards + self.updates + o.deletes + o.malformed

    def __iter__(self) -> Iterator[PlannedRecord]:
        late = set(self.late_ids)
        for member_id in range(1, self.options.members + 1):
            if member_id not in late:
                yield self._member(member_id, "members", version=0)
        yield from self._board_phase()
        for member_id in self.late_ids:
            yield self._member(member_id, "late_members", version=0)

    def _board_members(self) -> list[int]:
        """The member id of each board, in production order."""
        o, rng = self.options, self.rng
        owners = list(self.late_ids)  # every late member gets at least one board
        owners += [o.members + 1 + i for i in range(o.orphans)]  # ids never produced
        owners += [rng.randint(1, o.members) for _ in range(o.boards - len(owners))]
        rng.shuffle(owners)
        return owners

    def _board_phase(self) -> Iterator[PlannedRecord]:
        o, rng = self.options, self.rng
        owners = self._board_members()
        orphan_floor = o.members + 1
        late = set(self.late_ids)
        deleted: set[int] = set()
        half = len(owners) // 2
        update_every = len(owners) / self.updates if self.updates else 0.0
        malformed_every = len(owners) / o.malformed if o.malformed else 0.0
        next_update, next_malformed = 0.0, 0.0
        updates_done = malformed_done = 0
        for index, member_id in enumerate(owners):
            if index == half:
                for deleted_id in self.deleted_ids:
                    deleted.add(deleted_id)
                    yield PlannedRecord(
                        "member", str(deleted_id).encode(), None, "member_deletes", deleted_id
                    )
            while updates_done < self.updates and index >= next_update:
                updates_done += 1
                next_update += update_every
                target = rng.choice(self.updatable)
                yield self._member(target, "member_updates", version=updates_done)
            while malformed_done < o.malformed and index >= next_malformed:
                yield self._malformed(
                    MALFORMED_KINDS[malformed_done % len(MALFORMED_KINDS)], malformed_done
                )
                malformed_done += 1
                next_malformed += malformed_every
            if member_id >= orphan_floor:
                kind = "orphan_boards"
            elif member_id in late:
                kind = "late_boards"
            elif member_id in deleted:
                kind = "boards_of_deleted_members"
            else:
                kind = "boards"
            yield self._board(index, member_id, kind)
        if half == len(owners):  # no boards: deletes still happen
            for deleted_id in self.deleted_ids:
                yield PlannedRecord(
                    "member", str(deleted_id).encode(), None, "member_deletes", deleted_id
                )
        for _ in range(updates_done, self.updates):
            yield self._member(rng.choice(self.updatable), "member_updates", version=self.updates)
        for number in range(malformed_done, o.malformed):
            yield self._malformed(MALFORMED_KINDS[number % len(MALFORMED_KINDS)], number)

    def _member(self, member_id: int, kind: str, version: int) -> PlannedRecord:
        rng, start = self.rng, self.options.start_ms
        created = start + member_id * 37_000
        modified = created + version * 60_000
        payload = {
            "member_id": member_id,
            "nickname": f"{rng.choice(NICK_PARTS)}_{rng.choice(NICK_PARTS)}{rng.randint(1, 9999)}",
            "city": rng.choice(CITIES),
            "phone": f"010-{rng.randint(0, 9999):04d}-{rng.randint(0, 9999):04d}",
            "created_at": _iso(created),
            "modified_at": _iso(modified),
        }
        return PlannedRecord("member", str(member_id).encode(), _dumps(payload), kind, member_id)

    def _board_id(self) -> str:
        return f"{self.rng.getrandbits(96):024x}"

    def _board(self, index: int, member_id: int, kind: str) -> PlannedRecord:
        rng = self.rng
        board_id = self._board_id()
        created_ts = self.options.start_ms + 20_000_000_000 + index * 1_000 + rng.randint(0, 999)
        payload = {
            "id": board_id,
            "member_id": member_id,
            "title": " ".join(rng.choices(WORDS, k=rng.randint(2, 6))),
            "body": " ".join(rng.choices(WORDS, k=rng.randint(10, 60))),
            "created_ts": created_ts,
            "created_at": _iso(created_ts),
            "modified_at": _iso(created_ts + rng.randint(0, 3) * 60_000),
        }
        return PlannedRecord("board", board_id.encode(), _dumps(payload), kind, member_id)

    def _malformed(self, flaw: str, number: int) -> PlannedRecord:
        """A record a consumer must dead-letter, not crash on: ``flaw`` says what is wrong."""
        board_id = self._board_id()
        created_ts = self.options.start_ms + 20_000_000_000 + number
        good = {"id": board_id, "member_id": 1, "title": "t", "body": "b", "created_ts": created_ts}
        good |= {"created_at": _iso(created_ts), "modified_at": _iso(created_ts)}
        value: bytes
        if flaw == "not_json":
            value = b"\xff{not json " + board_id.encode()
        elif flaw == "wrong_type":
            value = _dumps(good | {"member_id": [1, 2], "created_ts": "yesterday"})
        elif flaw == "missing_key_field":
            value = _dumps({k: v for k, v in good.items() if k != "member_id"})
        elif flaw == "member_id_text":
            value = _dumps(good | {"member_id": "abc"})
        else:
            value = _dumps(good | {"body": "x" * OVERSIZED_BODY_BYTES})
        return PlannedRecord("board", board_id.encode(), value, f"malformed:{flaw}")
