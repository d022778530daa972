"""The join's semantics without Spark: every board ends joined or unmatched, never dropped."""

from __future__ import annotations

from boardstream.joins import schema
from boardstream.joins.member_table import AS_OF, JoinOptions, MemberTable
from boardstream.joins.records import InputRow

COLUMNS = schema.names(schema.INPUT)
OUT = schema.names(schema.OUTPUT)
TIMEOUT = 1_000


def member(
    member_id: int, ts: int, nickname: str, event_ms: int | None = None, offset: int = 0
) -> InputRow:
    values = dict.fromkeys(COLUMNS)
    values |= {
        "kind": "member",
        "member_id": member_id,
        "event_ms": event_ms or ts,
        "timestamp_ms": ts,
    }
    values |= {"partition": 0, "offset": offset or ts, "nickname": nickname, "city": "Seoul"}
    values |= {"phone": "010", "created_at": "c", "modified_at": f"m-{nickname}"}
    return InputRow(**values)


def tombstone(member_id: int, ts: int) -> InputRow:
    values = dict.fromkeys(COLUMNS)
    values |= {"kind": "tombstone", "member_id": member_id, "event_ms": ts, "timestamp_ms": ts}
    values |= {"partition": 0, "offset": ts}
    return InputRow(**values)


def board(board_id: str, member_id: int, ts: int, created_ts: int | None = None) -> InputRow:
    values = dict.fromkeys(COLUMNS)
    values |= {
        "kind": "board",
        "member_id": member_id,
        "event_ms": created_ts or ts,
        "timestamp_ms": ts,
    }
    values |= {"partition": 1, "offset": ts, "board_id": board_id, "title": "t", "body": "b"}
    values |= {"created_ts": created_ts or ts, "created_at": "c", "modified_at": "m"}
    return InputRow(**values)


def outcomes(rows: list[tuple]) -> list[tuple]:
    """(outcome, board_id, nickname or reason) per output row."""
    named = [dict(zip(OUT, row, strict=True)) for row in rows]
    return [(r["outcome"], r["board_id"], r["nickname"] or r["reason"]) for r in named]


def table(**options) -> MemberTable:
    return MemberTable(JoinOptions(unmatched_timeout_ms=TIMEOUT, **options), {})


def test_board_gets_the_profile_current_when_processed() -> None:
    t = table()
    out, waiting = t.apply(
        [member(1, 10, "old"), board("a", 1, 20), member(1, 30, "new"), board("b", 1, 40)], 0
    )
    assert outcomes(out) == [("joined", "a", "old"), ("joined", "b", "new")]
    assert not waiting


def test_records_apply_in_timestamp_order_whatever_the_arrival_order() -> None:
    t = table()
    out, _ = t.apply(
        [board("b", 1, 40), member(1, 30, "new"), board("a", 1, 20), member(1, 10, "old")], 0
    )
    assert outcomes(out) == [("joined", "a", "old"), ("joined", "b", "new")]


def test_equal_timestamps_apply_the_member_first() -> None:
    out, _ = table().apply([board("a", 1, 10), member(1, 10, "m")], 0)
    assert outcomes(out) == [("joined", "a", "m")]


def test_late_member_releases_waiting_boards_in_order() -> None:
    t = table()
    out, waiting = t.apply([board("a", 7, 1), board("b", 7, 2)], now_ms=100)
    assert out == [] and waiting
    out, _ = t.apply([member(7, 3, "late")], now_ms=200)
    assert outcomes(out) == [("joined", "a", "late"), ("joined", "b", "late")]
    assert t.entries[7].waiting == []


def test_missing_member_times_out_as_unmatched() -> None:
    t = table()
    t.apply([board("a", 9, 1)], now_ms=100)
    t.apply([board("b", 9, 2)], now_ms=600)
    assert t.expire(now_ms=100 + TIMEOUT - 1) == []
    assert outcomes(t.expire(now_ms=100 + TIMEOUT)) == [("unmatched", "a", "member_missing")]
    assert t.next_expiry_ms() == 600 + TIMEOUT
    assert outcomes(t.expire(now_ms=600 + TIMEOUT)) == [("unmatched", "b", "member_missing")]
    assert t.entries == {}  # nothing left for member 9: no state kept


def test_deleted_member_gives_member_deleted() -> None:
    t = table()
    out, _ = t.apply(
        [member(5, 1, "x"), board("a", 5, 2), tombstone(5, 3), board("b", 5, 4)], now_ms=10
    )
    assert outcomes(out) == [("joined", "a", "x")]
    assert outcomes(t.expire(now_ms=10 + TIMEOUT)) == [("unmatched", "b", "member_deleted")]


def test_a_member_recreated_after_delete_joins_waiting_boards() -> None:
    t = table()
    t.apply([member(5, 1, "x"), tombstone(5, 2), board("b", 5, 3)], now_ms=10)
    out, _ = t.apply([member(5, 4, "back")], now_ms=20)
    assert outcomes(out) == [("joined", "b", "back")]


def test_pending_is_bounded_per_member() -> None:
    t = table(max_pending_per_member=2)
    out, _ = t.apply([board("a", 3, 1), board("b", 3, 2), board("c", 3, 3)], now_ms=0)
    assert outcomes(out) == [("unmatched", "a", "pending_overflow")]
    assert [b.board_id for b in t.entries[3].waiting] == ["b", "c"]


def test_deletions_are_forgotten_after_their_retention() -> None:
    t = table(deleted_retention_ms=50)
    t.apply([member(5, 1, "x"), tombstone(5, 2)], now_ms=10)
    assert 5 in t.entries
    t.apply([member(6, 3, "y")], now_ms=100)
    assert 5 not in t.entries and 6 in t.entries


def test_as_of_uses_the_version_valid_at_the_board_event_time() -> None:
    t = table(mode=AS_OF)
    # Updates arrive out of order: v2 (valid from 200) before v1 (valid from 100).
    t.apply([member(1, 10, "v2", event_ms=200), member(1, 11, "v1", event_ms=100)], now_ms=0)
    out, waiting = t.apply(
        [
            board("early", 1, 12, created_ts=150),
            board("late", 1, 13, created_ts=250),
            board("before", 1, 14, created_ts=50),
        ],
        now_ms=0,
    )
    assert outcomes(out) == [("joined", "early", "v1"), ("joined", "late", "v2")]
    assert waiting  # "before" predates every version: it waits for an older one
    out, _ = t.apply([member(1, 15, "v0", event_ms=40)], now_ms=0)
    assert outcomes(out) == [("joined", "before", "v0")]


def test_as_of_history_is_pruned_to_the_retention_but_keeps_the_edge_version() -> None:
    t = table(mode=AS_OF, history_retention_ms=100)
    t.apply([member(1, i, f"v{i}", event_ms=i * 60) for i in range(1, 6)], now_ms=0)
    kept = [v.valid_from_ms for v in t.entries[1].versions]
    assert kept == [180, 240, 300]  # 300 - 100 = 200: versions from 200 on, plus the one at 180


def test_latest_mode_keeps_one_version() -> None:
    t = table()
    t.apply([member(1, i, f"v{i}") for i in range(1, 5)], now_ms=0)
    assert [v.nickname for v in t.entries[1].versions] == ["v4"]


def test_changed_says_whether_the_state_must_be_written_back() -> None:
    t = table()
    t.apply([member(1, 10, "ann")], now_ms=10)
    loaded = MemberTable(t.options, t.entries)
    out, _ = loaded.apply([board("b1", 1, 20), board("b2", 1, 21)], now_ms=21)
    assert [o[0] for o in outcomes(out)] == ["joined", "joined"]
    assert not loaded.changed, "boards that find their member leave the state as it was"

    waiting = MemberTable(t.options, t.entries)
    waiting.apply([board("b3", 2, 22)], now_ms=22)
    assert waiting.changed, "a pending board is new state"
    expiring = MemberTable(t.options, waiting.entries)
    assert outcomes(expiring.expire(22 + TIMEOUT)) == [("unmatched", "b3", "member_missing")]
    assert expiring.changed
    updated = MemberTable(t.options, expiring.entries)
    updated.apply([member(1, 30, "ann2")], now_ms=30)
    assert updated.changed


def test_output_rows_carry_every_field_in_place() -> None:
    """Whole rows, field by field: the board's own fields, the member's profile and where each
    came from (a field copied into the wrong place would show here, not only in Spark tests)."""
    t = table()
    t.apply([member(7, 100, "ann", offset=3)], now_ms=100)
    joined, _ = t.apply([board("b1", 7, 200, created_ts=150)], now_ms=200)
    waiting, _ = t.apply([board("b2", 8, 300)], now_ms=300)
    unmatched = t.expire(300 + TIMEOUT)
    assert waiting == []
    assert [row._asdict() for row in joined + unmatched] == [
        {
            "outcome": "joined",
            "reason": None,
            "board_id": "b1",
            "member_id": 7,
            "nickname": "ann",
            "city": "Seoul",
            "phone": "010",
            "title": "t",
            "body": "b",
            "created_ts": 150,
            "created_at": "c",
            "modified_at": "m",
            "member_modified_at": "m-ann",
            "board_partition": 1,
            "board_offset": 200,
            "board_timestamp_ms": 200,
            "member_partition": 0,
            "member_offset": 3,
        },
        {
            "outcome": "unmatched",
            "reason": "member_missing",
            "board_id": "b2",
            "member_id": 8,
            "nickname": None,
            "city": None,
            "phone": None,
            "title": "t",
            "body": "b",
            "created_ts": 300,
            "created_at": "c",
            "modified_at": "m",
            "member_modified_at": None,
            "board_partition": 1,
            "board_offset": 300,
            "board_timestamp_ms": 300,
            "member_partition": None,
            "member_offset": None,
        },
    ]
