"""The checks' one query run by DuckDB (``arrow_checks``, an incremental run's engine) against
the same query run by Spark (``spark_checks``, a full run's): the same facts on the same inputs,
random ones included (NULLs in every nullable column, replays, conflicts, forged positions and
rows, dead letters, waiting boards, outputs taken from evidence of deleted records, outputs
deleted unread). Where the engines' SQL differs (NULL handling, ``max_by``, windows, arrays),
this is what finds it.

The inputs give a holder's records at one position the same board id and distinct offsets, so
the facts are fully determined."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boardstream.joins.member_table import AS_OF, LATEST
from boardstream.joins.topics import JoinTopics
from boardstream.reconcile.checks import arrow_checks
from boardstream.reconcile.checks import spark_checks as checks
from boardstream.reconcile.checks.arrow_checks import ArrowInputs
from boardstream.reconcile.checks.spark_checks import CheckInputs, ReconcileOptions
from boardstream.reconcile.reads.readers import TableRead
from boardstream.reconcile.reads.snapshot import JobProgress, Snapshot
from boardstream.settings import Settings

PARTITION, OFFSET, DIGEST = pa.int32(), pa.int64(), pa.int64()
SCHEMAS = {
    "sources": [
        ("board_id", pa.string()),
        ("source_partition", PARTITION),
        ("source_offset", OFFSET),
        ("board_digest", DIGEST),
    ],
    "details": [
        ("board_id", pa.string()),
        ("member_id", pa.int64()),
        ("source_partition", PARTITION),
        ("source_offset", OFFSET),
        ("detail_partition", PARTITION),
        ("detail_offset", OFFSET),
        ("digest", DIGEST),
        ("board_digest", DIGEST),
        ("member_partition", PARTITION),
        ("member_offset", OFFSET),
        ("member_digest", DIGEST),
        ("expired", pa.bool_()),
    ],
    "unmatched": [
        ("board_id", pa.string()),
        ("source_partition", PARTITION),
        ("source_offset", OFFSET),
        ("board_digest", DIGEST),
        ("record_partition", PARTITION),
        ("record_offset", OFFSET),
        ("expired", pa.bool_()),
    ],
    "board_dead_letters": [
        ("board_id", pa.string()),
        ("source_partition", PARTITION),
        ("source_offset", OFFSET),
        ("record_partition", PARTITION),
        ("record_offset", OFFSET),
        ("expired", pa.bool_()),
    ],
    "sink_dead_letters": [("detail_partition", PARTITION), ("detail_offset", OFFSET)],
    "refused_members": [("member_partition", PARTITION), ("member_offset", OFFSET)],
    "members": [
        ("member_id", pa.int64()),
        ("member_partition", PARTITION),
        ("member_offset", OFFSET),
        ("member_digest", DIGEST),
        ("tombstone", pa.bool_()),
    ],
    "table": [
        ("board_id", pa.string()),
        ("detail_partition", PARTITION),
        ("detail_offset", OFFSET),
        ("digest", DIGEST),
        ("typed", pa.bool_()),
    ],
    "waiting": [
        ("board_id", pa.string()),
        ("source_partition", PARTITION),
        ("source_offset", OFFSET),
        ("member_id", pa.int64()),
        ("arrived_ms", pa.int64()),
    ],
}
SETTINGS = Settings()
TOPICS = JoinTopics.of(SETTINGS)
NOW_MS = 10_000_000
OPTIONS = ReconcileOptions(stall_after_ms=1_000, unmatched_timeout_ms=1_000)

BOARDS = st.sampled_from(["a", "b", None])
PARTITIONS = st.sampled_from([0, 1])
SOURCE_OFFSETS = st.integers(0, 2)
DIGESTS = st.sampled_from([1, 2, None])
MEMBER_IDS = [1, 2, None]
ENDS = st.dictionaries(PARTITIONS, st.integers(0, 6), max_size=2)
# Members' own offsets are the records' running count: an end among them leaves some unread.
MEMBER_ENDS = st.dictionaries(PARTITIONS, st.integers(0, 30), max_size=2)


def _table(name: str, rows: list[dict]) -> pa.Table:
    schema = pa.schema(SCHEMAS[name])
    return pa.Table.from_pylist(rows, schema=schema)


@st.composite
def inputs(draw: st.DrawFn) -> tuple[ArrowInputs, Snapshot, str]:
    """Random check inputs: records of a few source positions in every holder, with the same
    board id for a holder's records at one position (replays), unique offsets elsewhere."""
    offsets = iter(range(1_000))  # each record's own offset, unique across partitions

    def position(nullable: bool = False) -> tuple[int | None, int | None]:
        if nullable and draw(st.integers(0, 9)) == 0:
            return None, draw(st.sampled_from([None, 1]))
        return draw(PARTITIONS), draw(SOURCE_OFFSETS)

    named: dict[tuple[str, tuple], str | None] = {}

    def board_at(holder: str, at: tuple) -> str | None:
        if (holder, at) not in named:
            named[holder, at] = draw(BOARDS)
        return named[holder, at]

    def own(partition: int | None = None) -> tuple[int, int]:
        return (draw(PARTITIONS) if partition is None else partition), next(offsets)

    sources = [
        {
            "board_id": draw(BOARDS),
            "source_partition": p,
            "source_offset": o,
            "board_digest": draw(DIGESTS),
        }
        for p, o in draw(st.sets(st.tuples(PARTITIONS, SOURCE_OFFSETS), max_size=6))
    ]
    members = []
    for _ in range(draw(st.integers(0, 5))):
        p, o = own()
        members.append(
            {
                "member_id": draw(st.sampled_from(MEMBER_IDS)),
                "member_partition": p,
                "member_offset": o,
                "member_digest": draw(DIGESTS),
                "tombstone": draw(st.booleans()),
            }
        )
    details = []
    for _ in range(draw(st.integers(0, 7))):
        at = position(nullable=True)
        p, o = own()
        member = draw(st.sampled_from([*members, None])) if members else None
        details.append(
            {
                "board_id": board_at("joined", at),
                "member_id": draw(st.sampled_from(MEMBER_IDS)),
                "source_partition": at[0],
                "source_offset": at[1],
                "detail_partition": p,
                "detail_offset": o,
                "digest": draw(DIGESTS),
                "board_digest": draw(DIGESTS),
                "member_partition": member["member_partition"] if member else draw(PARTITIONS),
                "member_offset": member["member_offset"] if member else draw(st.integers(0, 3)),
                "member_digest": draw(DIGESTS),
                "expired": draw(st.booleans()),
            }
        )
    unmatched = []
    for _ in range(draw(st.integers(0, 3))):
        at = position(nullable=True)
        p, o = own()
        unmatched.append(
            {
                "board_id": board_at("unmatched", at),
                "source_partition": at[0],
                "source_offset": at[1],
                "board_digest": draw(DIGESTS),
                "record_partition": p,
                "record_offset": o,
                "expired": draw(st.booleans()),
            }
        )
    dead = []
    for _ in range(draw(st.integers(0, 2))):
        at = position()
        p, o = own()
        dead.append(
            {
                "board_id": None,
                "source_partition": at[0],
                "source_offset": at[1],
                "record_partition": p,
                "record_offset": o,
                "expired": draw(st.booleans()),
            }
        )
    waiting = []
    for _ in range(draw(st.integers(0, 3))):
        at = position(nullable=True)
        waiting.append(
            {
                "board_id": board_at("pending", at),
                "source_partition": at[0],
                "source_offset": at[1],
                "member_id": draw(st.sampled_from(MEMBER_IDS)),
                "arrived_ms": draw(st.sampled_from([0, NOW_MS, None])),
            }
        )
    detail_positions = [(d["detail_partition"], d["detail_offset"]) for d in details]
    anywhere = st.sampled_from([*detail_positions, (0, 999), (1, -1), (None, 2), (0, None)])
    table = [
        {
            "board_id": draw(st.sampled_from(["a", "b", "(null board_id)"])),
            "detail_partition": (p := draw(anywhere))[0],
            "detail_offset": p[1],
            "digest": draw(DIGESTS),
            "typed": draw(st.booleans()),
        }
        for _ in range(draw(st.integers(0, 5)))
    ]
    sink_dead = [
        {"detail_partition": p, "detail_offset": o} for p, o in draw(st.lists(anywhere, max_size=2))
    ]
    refused = [
        {"member_partition": m["member_partition"], "member_offset": m["member_offset"]}
        for m in draw(st.lists(st.sampled_from(members), max_size=2) if members else st.just([]))
    ]
    detail_ends = {p: o + 1 for p, o in detail_positions if draw(st.booleans())}
    arrow = ArrowInputs(
        sources=_table("sources", sources),
        details=_table("details", details),
        unmatched=_table("unmatched", unmatched),
        board_dead_letters=_table("board_dead_letters", dead),
        sink_dead_letters=_table("sink_dead_letters", sink_dead),
        refused_members=_table("refused_members", refused),
        members=_table("members", members),
        table=_table("table", table),
        waiting=_table("waiting", waiting),
        table_read=TableRead(pa.table({}), []),
        # output records deleted unread: a read position in no outcome is expired_unseen
        unseen=draw(st.sampled_from([(), ("board-detail[0] [0, 3)",)])),
    )
    topics = SETTINGS.board_topic, SETTINGS.board_detail_topic, SETTINGS.member_topic
    join = JobProgress(
        0,
        {SETTINGS.board_topic: draw(ENDS), SETTINGS.member_topic: draw(MEMBER_ENDS)},
        under_way_to=draw(st.none() | st.builds(lambda e: {SETTINGS.board_topic: e}, ENDS)),
    )
    sink = JobProgress(0, {SETTINGS.board_detail_topic: detail_ends})
    snapshot = Snapshot(
        datetime.now(UTC),
        {SETTINGS.board_topic: draw(ENDS), SETTINGS.board_detail_topic: draw(ENDS)}
        | {topics[2]: {}},
        {
            SETTINGS.board_topic: {0: 5, 1: 5},
            SETTINGS.board_detail_topic: {p: o + 1 for p, o in detail_positions} or {0: 0},
            SETTINGS.member_topic: {},
        },
        join,
        sink,
    )
    return arrow, snapshot, draw(st.sampled_from([LATEST, AS_OF, None]))


def spark_evaluate(
    spark, arrow: ArrowInputs, snapshot: Snapshot, mode: str | None, in_process: bool = False
) -> pa.Table:
    """The full run's checks of ``arrow`` as Spark frames: in Spark, or ``in_process``, the
    frames collected as Arrow and checked by DuckDB (a small full run's way)."""
    frame = spark.createDataFrame
    spark_inputs = CheckInputs(
        **{name: frame(getattr(arrow, name)) for name in SCHEMAS},
        table_read=arrow.table_read,
        unseen=arrow.unseen,
    )
    return checks.evaluate(
        spark_inputs, SETTINGS, TOPICS, snapshot, mode, NOW_MS, OPTIONS, in_process
    )


def _facts(table: pa.Table) -> Counter:
    return Counter(
        zip(
            *(
                table.column(c).to_pylist()
                for c in ("kind", "partition", "offset", "board_id", "detail")
            ),
            strict=True,
        )
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=inputs())
def test_the_two_engines_find_the_same_facts(spark, case) -> None:
    arrow, snapshot, mode = case
    expected = _facts(spark_evaluate(spark, arrow, snapshot, mode))
    assert (
        _facts(arrow_checks.evaluate(arrow, SETTINGS, TOPICS, snapshot, mode, NOW_MS, OPTIONS))
        == expected
    )
    # A small full run's: its Spark frames collected and checked in process.
    assert _facts(spark_evaluate(spark, arrow, snapshot, mode, in_process=True)) == expected


def test_the_oldest_waiting_boards_are_listed_alike(spark) -> None:
    """Ties in age ordered by board id, the summary's limit applied after the order."""
    waiting = _table(
        "waiting",
        [
            {
                "board_id": f"b{n:02d}",
                "source_partition": 0,
                "source_offset": n,
                "member_id": 1,
                "arrived_ms": NOW_MS - 1_000 * (n % 3),
            }
            for n in reversed(range(25))
        ],
    )
    options = ReconcileOptions(unmatched_timeout_ms=600_000, examples=20)
    expected = checks.waiting_now(spark.createDataFrame(waiting), NOW_MS, options)
    assert arrow_checks.waiting_now(waiting, NOW_MS, options) == expected
    assert len(expected) == 20 and expected[0].startswith("b02: waiting 2s")


@pytest.mark.parametrize("order", [1, -1], ids=["as-written", "reversed"])
def test_an_output_is_first_at_its_position_by_its_own_offset(order: int) -> None:
    """Two board-detail records at b2's source position, b2's own first, an imposter's written
    later: the imposter is extra and b2's is no replay, whatever order the engine reads the
    records in (it read them in either order: a tie in the holders' order)."""
    detail = dict.fromkeys(("member_id", "member_partition", "member_offset"), None) | {
        "source_partition": 0,
        "source_offset": 0,
        "detail_partition": 0,
        "digest": 1,
        "board_digest": 1,
        "member_digest": None,
        "expired": False,
    }
    details = [
        detail | {"board_id": "b2", "detail_offset": 0},
        detail | {"board_id": "imposter", "detail_offset": 1, "digest": 2},
    ][::order]
    empty = {name: _table(name, []) for name in SCHEMAS}
    arrow = ArrowInputs(
        **empty
        | {
            "sources": _table(
                "sources",
                [{"board_id": "b2", "source_partition": 0, "source_offset": 0, "board_digest": 1}],
            ),
            "details": _table("details", details),
        },
        table_read=TableRead(pa.table({}), []),
    )
    board, detail_topic = SETTINGS.board_topic, SETTINGS.board_detail_topic
    snapshot = Snapshot(
        datetime.now(UTC),
        {board: {0: 0}, detail_topic: {0: 0}, SETTINGS.member_topic: {}},
        {board: {0: 1}, detail_topic: {0: 2}, SETTINGS.member_topic: {}},
        JobProgress(0, {board: {0: 1}, SETTINGS.member_topic: {}}),
        JobProgress(0, {detail_topic: {0: 2}}),
    )
    found = _facts(arrow_checks.evaluate(arrow, SETTINGS, TOPICS, snapshot, None, NOW_MS, OPTIONS))
    assert {(kind, board_id) for kind, _, _, board_id, _ in found} == {
        ("source", "b2"),
        ("read", "b2"),
        ("conflicting", "b2"),
        ("extra", "imposter"),
        # the table is empty, no member known: beside the point
        *(
            (kind, board)
            for kind in ("expected_table_rows", "missing_in_table", "referential")
            for board in ("b2", "imposter")
        ),
    }


def test_many_positions_are_checked_within_a_small_memory_bound() -> None:
    """150,000 boards, each joined once, loaded in the table: DuckDB checks them within 256 MB.
    The positions' window once had a collect_set over each position's records, which DuckDB
    ran as a windowed LIST(DISTINCT): 1.5 GB for 200,000 records, out of memory past 18 GB at
    the production-scale demo's 900,000 (#67)."""
    n = 150_000
    offsets = pa.array(range(n), OFFSET)
    # Each board's digest its own, as real contents are.
    zeros, digests = pa.array([0] * n, PARTITION), pa.array(range(n), DIGEST)
    ids = pa.array([f"b{i}" for i in range(n)], pa.string())
    empty = {name: _table(name, []) for name in SCHEMAS}
    nulls = {c: pa.nulls(n, t) for c, t in SCHEMAS["details"] if c.startswith("member")}
    details = pa.table(
        {
            "board_id": ids,
            "source_partition": zeros,
            "source_offset": offsets,
            "detail_partition": zeros,
            "detail_offset": offsets,
            "digest": digests,
            "board_digest": digests,
            "expired": pa.array([False] * n),
            **nulls,
        }
    ).select([c for c, _ in SCHEMAS["details"]])
    table = pa.table(
        {"board_id": ids, "detail_partition": zeros, "detail_offset": offsets, "digest": digests}
        | {"typed": pa.array([True] * n)}
    ).select([c for c, _ in SCHEMAS["table"]])
    arrow = ArrowInputs(
        **empty
        | {
            "sources": pa.table(
                {"board_id": ids, "source_partition": zeros, "source_offset": offsets}
                | {"board_digest": digests}
            ),
            "details": details.cast(pa.schema(SCHEMAS["details"])),
            "table": table.cast(pa.schema(SCHEMAS["table"])),
        },
        table_read=TableRead(pa.table({}), []),
    )
    board, detail_topic = SETTINGS.board_topic, SETTINGS.board_detail_topic
    snapshot = Snapshot(
        datetime.now(UTC),
        {board: {0: 0}, detail_topic: {0: 0}, SETTINGS.member_topic: {}},
        {board: {0: n}, detail_topic: {0: n}, SETTINGS.member_topic: {}},
        JobProgress(0, {board: {0: n}, SETTINGS.member_topic: {}}),
        JobProgress(0, {detail_topic: {0: n}}),
    )
    bounded = SETTINGS.model_copy(update={"reconcile_in_process_memory_mb": 256})
    found = arrow_checks.evaluate(arrow, bounded, TOPICS, snapshot, None, NOW_MS, OPTIONS)
    kinds = Counter(found.column("kind").to_pylist())
    assert {kind: kinds[kind] for kind in ("source", "read", "joined", "expected_table_rows")} == (
        dict.fromkeys(("source", "read", "joined", "expected_table_rows"), n)
    )
    assert kinds["conflicting"] == kinds["missing"] == kinds["mismatched"] == 0
