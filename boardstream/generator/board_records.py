"""The shipped pipeline's generated records: members and boards shaped like production's
(nicknames, cities, phone numbers, titles and bodies of words), byte for byte what the generator
produced before it took declarations, so a seed still means the data set the README's demo and
the benchmarks measured."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

from boardstream.generator.kinds import Kinds
from boardstream.generator.timeline import record_ms, row_created_ms, row_version_ms

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


def board_kinds() -> Kinds:
    return Kinds(row="member", record="board")


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _dumps(payload: dict) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


class BoardRecords:
    """:class:`~boardstream.generator.plan.Records` of board_detail."""

    flaws = MALFORMED_KINDS

    def __init__(self, rng: random.Random, start_ms: int) -> None:
        self.rng = rng
        self.start_ms = start_ms

    def key(self, row: int) -> bytes:
        return str(row).encode()

    def row(self, row: int, version: int) -> bytes:
        rng = self.rng
        payload = {
            "member_id": row,
            "nickname": f"{rng.choice(NICK_PARTS)}_{rng.choice(NICK_PARTS)}{rng.randint(1, 9999)}",
            "city": rng.choice(CITIES),
            "phone": f"010-{rng.randint(0, 9999):04d}-{rng.randint(0, 9999):04d}",
            "created_at": _iso(row_created_ms(self.start_ms, row)),
            "modified_at": _iso(row_version_ms(self.start_ms, row, version)),
        }
        return _dumps(payload)

    def _board_id(self) -> str:
        return f"{self.rng.getrandbits(96):024x}"

    def record(self, index: int, row: int) -> tuple[bytes, bytes, int]:
        rng = self.rng
        board_id = self._board_id()
        created_ts = record_ms(self.start_ms, index, rng.randint(0, 999))
        payload = {
            "id": board_id,
            "member_id": row,
            "title": " ".join(rng.choices(WORDS, k=rng.randint(2, 6))),
            "body": " ".join(rng.choices(WORDS, k=rng.randint(10, 60))),
            "created_ts": created_ts,
            "created_at": _iso(created_ts),
            "modified_at": _iso(created_ts + rng.randint(0, 3) * 60_000),
        }
        return board_id.encode(), _dumps(payload), created_ts

    def malformed(self, flaw: str, number: int) -> tuple[bytes, bytes, int]:
        board_id = self._board_id()
        created_ts = record_ms(self.start_ms, 0, number)
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
        return board_id.encode(), value, created_ts
