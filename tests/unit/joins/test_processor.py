"""The Python join engine's processor (boardstream/joins/processor.py) without Spark: the state
layout it stores per bucket, the tick and dead-letter buckets, timers for waiting boards, and the
save/load round trip of a bucket's member table. Spark's side is replaced where the processor
takes it as a parameter: a fake state handle and value state, and pandas frames as input.

It also refuses integer input that pandas turned into floats: storing rounded member ids would
lose members silently."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from pyspark.sql.streaming.stateful_processor import ExpiredTimerInfo, TimerValues

from boardstream.joins import schema
from boardstream.joins.member_table import AS_OF, JoinOptions, MemberTable
from boardstream.joins.processor import (
    BUCKET_STATE_DDL,
    DEAD_LETTER_BUCKET,
    INPUT_COLUMNS,
    OUTPUT_COLUMNS,
    OUTPUT_DDL,
    TICK_BUCKET,
    BucketedMemberJoin,
    input_rows,
)
from boardstream.joins.records import Entry, Version, WaitingBoard

TIMEOUT = 1_000


class FakeValueState:
    """A value state as the processor uses it: get, update, clear."""

    def __init__(self) -> None:
        self.value: tuple | None = None
        self.updates = 0
        self.clears = 0

    def get(self) -> tuple | None:
        return self.value

    def update(self, value: tuple) -> None:
        self.value = value
        self.updates += 1

    def clear(self) -> None:
        self.value = None
        self.clears += 1


class FakeHandle:
    def __init__(self, state: FakeValueState) -> None:
        self.state = state
        self.asked: list[tuple[str, str]] = []
        self.timers: list[int] = []

    def getValueState(self, name: str, ddl: str) -> FakeValueState:
        self.asked.append((name, ddl))
        return self.state

    def registerTimer(self, expiry_ms: int) -> None:
        self.timers.append(expiry_ms)


def processor(state: FakeValueState, **options: Any) -> tuple[BucketedMemberJoin, FakeHandle]:
    join = BucketedMemberJoin(JoinOptions(unmatched_timeout_ms=TIMEOUT, **options))
    handle = FakeHandle(state)
    join.init(handle)
    return join, handle


def row(kind: str, member_id: int, ts: int, **fields: Any) -> dict[str, Any]:
    """An input row as the JVM sends it: integers never null (0 stands in), text may be."""
    values: dict[str, Any] = dict.fromkeys(INPUT_COLUMNS)
    values |= {"kind": kind, "member_id": member_id, "event_ms": ts, "timestamp_ms": ts}
    values |= {"partition": 0, "offset": ts, "created_ts": 0}
    return values | fields


def member(member_id: int, ts: int, nickname: str) -> dict[str, Any]:
    return row("member", member_id, ts, nickname=nickname, city="Seoul", modified_at=f"m{ts}")


def board(board_id: str, member_id: int, ts: int) -> dict[str, Any]:
    return row("board", member_id, ts, partition=1, board_id=board_id, title="t", created_ts=ts)


def frame(*rows: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=INPUT_COLUMNS)


def tuples(frames: list[pd.DataFrame]) -> list[tuple]:
    assert all(list(f.columns) == OUTPUT_COLUMNS for f in frames)
    return [tuple(r) for f in frames for r in f.astype(object).itertuples(index=False, name=None)]


def joined(board_id: str, member_id: int, ts: int, nickname: str, member_ts: int) -> tuple:
    return (
        "joined", None, board_id, member_id, nickname, "Seoul", None, "t", None, ts, None, None,
        f"m{member_ts}", 1, ts, ts, 0, member_ts, None, None,
    )  # fmt: skip


def test_integer_columns_come_through_exact() -> None:
    (only,) = list(input_rows(frame(board("b", 2**63 - 1, 1))))
    assert only.member_id == 2**63 - 1


def test_a_float_member_id_column_stops_the_join() -> None:
    rows = pd.DataFrame([board("b", 1, 1), board("c", None, 2)], columns=INPUT_COLUMNS)
    with pytest.raises(
        ValueError, match=r"^integer input columns arrived as floats \(a null\?\): \['member_id'\]$"
    ):
        list(input_rows(rows))


def test_the_bucket_state_layout_is_three_column_wise_tables() -> None:
    """The layout a checkpoint stores: changing it makes existing state unreadable."""
    member_columns = [f"`version_{n}` array<{k}>" for n, k in schema.MEMBER]
    pending_columns = [f"`pending_{n}` array<{k}>" for n, k in schema.PENDING]
    assert (
        ", ".join(
            [
                "`version_member_id` array<bigint>",
                *member_columns,
                "`deleted_member_id` array<bigint>",
                "`deleted_at_ms` array<bigint>",
                "`pending_member_id` array<bigint>",
                *pending_columns,
            ]
        )
        == BUCKET_STATE_DDL
    )
    assert member_columns[0] == "`version_nickname` array<string>"
    assert pending_columns[-1] == "`pending_arrived_ms` array<bigint>"


def test_output_is_the_schema_output_plus_the_dead_letter() -> None:
    assert [*schema.names(schema.OUTPUT), "dead_key", "dead_letter"] == OUTPUT_COLUMNS
    assert schema.ddl(schema.OUTPUT) + ", `dead_key` string, `dead_letter` string" == OUTPUT_DDL


def test_special_buckets_cannot_collide_with_hash_buckets() -> None:
    """Hash buckets are pmod(hash, n) >= 0; the two special ones are negative and distinct."""
    assert (DEAD_LETTER_BUCKET, TICK_BUCKET) == (-1, -2)


def test_init_asks_for_one_value_state_in_the_bucket_layout() -> None:
    _, handle = processor(FakeValueState())
    assert handle.asked == [("members", BUCKET_STATE_DDL)]


def test_the_tick_bucket_emits_nothing_and_leaves_state_alone() -> None:
    state = FakeValueState()
    join, handle = processor(state)
    ticks = pd.DataFrame([row("tick", 0, 5)], columns=INPUT_COLUMNS)
    assert list(join.handleInputRows((TICK_BUCKET,), iter([ticks]), TimerValues(100))) == []
    assert (state.updates, state.clears, handle.timers) == (0, 0, [])


def test_dead_letters_leave_as_they_came_one_frame_per_input_frame() -> None:
    state = FakeValueState()
    join, handle = processor(state)
    letters = [
        pd.DataFrame({"dead_key": ["a2V5", None], "dead_letter": ['{"e":1}', '{"e":2}']}),
        pd.DataFrame({"dead_key": ["azI="], "dead_letter": ['{"e":3}']}),
    ]
    out = list(join.handleInputRows((DEAD_LETTER_BUCKET,), iter(letters), TimerValues(100)))
    blank = (None,) * (len(schema.OUTPUT) - 1)
    assert len(out) == 2
    assert tuples(out) == [
        ("dead_letter", *blank, "a2V5", '{"e":1}'),
        ("dead_letter", *blank, None, '{"e":2}'),
        ("dead_letter", *blank, "azI=", '{"e":3}'),
    ]
    assert (state.updates, state.clears, handle.timers) == (0, 0, [])


def test_a_member_and_its_board_join_and_the_member_is_stored() -> None:
    state = FakeValueState()
    join, handle = processor(state)
    batch = frame(member(7, 10, "ann"), board("b1", 7, 20))
    out = list(join.handleInputRows((3,), iter([batch]), TimerValues(500)))
    assert tuples(out) == [joined("b1", 7, 20, "ann", 10)]
    assert handle.timers == []
    assert state.value == (
        [7], ["ann"], ["Seoul"], [None], [None], ["m10"], [10], [0], [10], [False],
        [], [],
        [], [], [], [], [], [], [], [], [], [], [],
    )  # fmt: skip
    assert len(state.value) == BUCKET_STATE_DDL.count("array<")


def test_a_later_batch_joins_from_the_stored_state_without_writing_it_back() -> None:
    state = FakeValueState()
    first, _ = processor(state)
    list(first.handleInputRows((3,), iter([frame(member(7, 10, "ann"))]), TimerValues(500)))
    assert state.updates == 1
    later, handle = processor(state)
    out = list(later.handleInputRows((3,), iter([frame(board("b2", 7, 30))]), TimerValues(600)))
    assert tuples(out) == [joined("b2", 7, 30, "ann", 10)]
    assert (state.updates, handle.timers) == (1, [])


def test_a_waiting_board_sets_a_timer_and_times_out_unmatched() -> None:
    state = FakeValueState()
    join, handle = processor(state)
    out = list(join.handleInputRows((3,), iter([frame(board("b", 9, 40))]), TimerValues(500)))
    assert out == []  # nothing to emit: no empty frame either
    assert handle.timers == [500 + TIMEOUT]
    assert state.value is not None and state.value[12:14] == ([9], ["b"])  # pending table

    assert list(join.handleExpiredTimer((3,), TimerValues(1_400), ExpiredTimerInfo(1_499))) == []
    assert state.updates == 1, "nothing expired: state not written"

    expired = join.handleExpiredTimer((3,), TimerValues(1_500), ExpiredTimerInfo(500 + TIMEOUT))
    assert tuples(list(expired)) == [
        (
            "unmatched",
            "member_missing",
            "b",
            9,
            None,
            None,
            None,
            "t",
            None,
            40,
            None,
            None,
            None,
            1,
            40,
            40,
            None,
            None,
            None,
            None,
        )
    ]
    assert (state.value, state.clears) == (None, 1), "an empty table clears the state"


def test_the_member_table_survives_a_save_and_load() -> None:
    """Versions (several, as-of), a deletion and waiting boards, stored column-wise and read
    back as the same entries."""
    state = FakeValueState()
    join, _ = processor(state, mode=AS_OF)
    entries = {
        1: Entry(
            versions=[
                Version("a", "Seoul", "010", "c", "m1", 100, 0, 5, False),
                Version("b", None, None, None, "m2", 200, 0, 6, False),
            ]
        ),
        2: Entry(deleted_at_ms=300, waiting=[WaitingBoard("x", "t", "b", 1, "c", "m", 1, 7, 8, 9)]),
        3: Entry(
            waiting=[
                WaitingBoard("y", None, None, 2, None, None, 2, 10, 11, 12),
                WaitingBoard("z", None, None, 3, None, None, 2, 13, 14, 15),
            ]
        ),
    }
    join._save(MemberTable(join.options, entries))
    assert join._load() == entries
    assert state.value is not None
    assert state.value[0] == [1, 1] and state.value[10:12] == ([2], [300])


def test_nothing_stored_loads_as_no_members() -> None:
    join, _ = processor(FakeValueState())
    assert join._load() == {}
