"""The join has one definition: the JVM operator's per-key logic (``io.boardstream.join``,
driven batch by batch through ``JoinTables``, on board_detail's declared layout) and the
Python ``MemberTable`` give the same outputs for the same random input: member updates,
tombstones, late members, boards out of event-time order, timeouts, pending overflow, deletions
forgotten after their retention, in both join modes. Each side fires its own timers as its
Spark operator does (the Python operator one per bucket, the JVM one per key)."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boardstream.joins import jvm_operator, schema
from boardstream.joins.layout import JoinLayout
from boardstream.joins.member_table import AS_OF, LATEST, JoinOptions, MemberTable
from boardstream.joins.records import InputRow
from boardstream.pipelines import shipped

COLUMNS = schema.names(schema.INPUT)
LAYOUT = JoinLayout.of(shipped("board_detail"))
KINDS = {"board": "stream", "member": "table", "tombstone": "tombstone"}
START = 10_000  # the first batch's processing time


@dataclass
class PythonOperator:
    """The Python engine's operator over one bucket: apply, then the bucket's due timers."""

    table: MemberTable
    timers: set[int]

    def batch(self, rows: list[InputRow], now_ms: int) -> list[tuple]:
        out, waiting = self.table.apply(rows, now_ms)
        if waiting:
            self.timers.add(now_ms + self.table.options.unmatched_timeout_ms)
        for due in sorted(t for t in self.timers if t <= now_ms):
            self.timers.discard(due)
            out += self.table.expire(due)
        return [tuple(row) for row in out]


def record(kind: str, member_id: int, ts: int, offset: int, event_ms: int, n: int) -> InputRow:
    values = dict.fromkeys(COLUMNS)
    values |= {"kind": kind, "member_id": member_id, "timestamp_ms": ts, "event_ms": event_ms}
    values |= {"partition": n % 2, "offset": offset, "created_ts": 0}
    if kind == "board":
        values |= {"board_id": f"b{n}", "title": f"t{n}", "body": None, "created_ts": event_ms}
        values |= {"created_at": f"c{n}", "modified_at": None}
    elif kind == "member":
        values |= {"nickname": f"n{n}", "city": f"city{n % 3}", "phone": None}
        values |= {"created_at": "c", "modified_at": f"m{n}"}
    return InputRow(**values)


@st.composite
def scenarios(draw):
    # Few distinct durations and times near the processing time, so that boundaries (a board
    # exactly at its timeout, a deletion exactly at its retention) come up often.
    durations = st.sampled_from([5, 10, 20, 40])
    options = JoinOptions(
        mode=draw(st.sampled_from([LATEST, AS_OF])),
        unmatched_timeout_ms=draw(durations),
        max_pending_per_member=draw(st.integers(1, 4)),
        history_retention_ms=draw(durations),
        deleted_retention_ms=draw(durations),
    )
    events = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["board", "board", "member", "tombstone"]),
                st.integers(1, 4),  # member id
                st.sampled_from([0, 0, 5]),  # Kafka time step
                st.sampled_from([-10, -5, 0, 5, 10]),  # event time relative to Kafka time
            ),
            max_size=40,
        )
    )
    rows, ts = [], START - 20
    for n, (kind, member_id, step, skew) in enumerate(events):
        ts += step
        rows.append(record(kind, member_id, ts, n, ts + skew, n))
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=6)))
    batches = [rows[a:b] for a, b in zip([0, *cuts], [*cuts, len(rows)], strict=True)]
    steps = st.sampled_from([0, 5, 10, 20])
    gaps = draw(st.lists(steps, min_size=len(batches) + 3, max_size=len(batches) + 3))
    return options, batches, gaps


def jvm_join(spark, options: JoinOptions):
    jvm = spark._jvm
    return jvm.io.boardstream.join.JoinTables(
        jvm_operator.java_layout(jvm, LAYOUT), jvm_operator.java_options(jvm, options)
    )


def declared(row: InputRow) -> list:
    """A Python engine's input row as the JVM's routed record: the same values, its side's
    fields in the declared layout's columns (a tombstone has none)."""
    side = {"board": LAYOUT.stream, "member": LAYOUT.table}.get(row.kind)
    fields = None if side is None else [getattr(row, name) for name, _ in side.columns]
    head = [KINDS[row.kind], row.member_id, row.event_ms, row.timestamp_ms]
    return [*head, row.partition, row.offset, fields]


def jvm_batch(jvm, rows: list[InputRow], now: int) -> list[tuple]:
    return [tuple(row) for row in jvm.batch([declared(row) for row in rows], now)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_the_jvm_and_python_operators_emit_the_same_rows(spark, scenario) -> None:
    options, batches, gaps = scenario
    python = PythonOperator(MemberTable(options, {}), set())
    jvm = jvm_join(spark, options)
    now = START
    # Then a few empty batches, so every waiting board meets its timeout.
    for rows, gap in zip([*batches, [], [], []], gaps, strict=True):
        now += gap
        expected = python.batch(rows, now)
        actual = jvm_batch(jvm, rows, now)
        assert sorted(actual, key=repr) == sorted(expected, key=repr)
    assert jvm.size() == len(python.table.entries)


def test_the_comparison_can_fail(spark) -> None:
    """The same driver tells different semantics apart: the JVM side in as-of mode, the Python
    side in latest mode, on a member update older than the board."""
    rows = [record("member", 1, 1_000, 0, 1_000, 0), record("member", 1, 1_001, 1, 5_000, 1)]
    rows.append(record("board", 1, 1_002, 2, 2_000, 2))
    python = PythonOperator(MemberTable(JoinOptions(mode=LATEST), {}), set())
    jvm = jvm_join(spark, JoinOptions(mode=AS_OF))
    expected = python.batch(rows, 10_000)
    actual = jvm_batch(jvm, rows, 10_000)
    assert [r[4] for r in expected] == ["n1"] and [r[4] for r in actual] == ["n0"]
