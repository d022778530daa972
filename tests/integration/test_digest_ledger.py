"""The digest ledger (issue #22) on a real SQLite file and a real PostgreSQL database, each test
on both: every column round-trips (NULLs, empty text, the int64 extremes), lookups return
exactly the rows of the requested keys across chunk boundaries, a replayed append changes
nothing, ``below`` keeps the record at the earliest offset, the cursor only moves forward, and a
rolled-back transaction leaves nothing behind. Appends run through both of PostgreSQL's paths
(executemany and COPY)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from boardstream import database
from boardstream.reconcile.incremental import digest_ledger as ledger
from tests.fixtures import sqlite_or_postgres_url
from tests.store import LEDGER

LOW, HIGH = -(2**63), 2**63 - 1
INT_LOW, INT_HIGH = -(2**31), 2**31 - 1
# Keys per lookup statement: offsets of one partition (its number is a parameter too), ids.
OFFSETS = ledger.CHUNK_PARAMETERS - 1
IDS = ledger.CHUNK_PARAMETERS


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    created = database.engine(sqlite_or_postgres_url(request, tmp_path))
    LEDGER.create(created)
    yield created
    created.dispose()


@pytest.fixture(params=["executemany", "copy"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which way PostgreSQL appends (SQLite has one): COPY from the first row, or never."""
    monkeypatch.setattr(ledger, "COPY_THRESHOLD", 1 if request.param == "copy" else 1 << 62)
    return request.param


def source_rows(n: int, partition: int = 0, first: int = 0) -> pa.Table:
    offsets = range(first, first + n)
    return pa.table(
        {
            "board_id": [f"b{o}" for o in offsets],
            "source_partition": pa.array([partition] * n, pa.int32()),
            "source_offset": pa.array(offsets, pa.int64()),
            "board_digest": pa.array([o * 7 for o in offsets], pa.int64()),
        }
    )


def member_rows(n: int, versions: int = 1) -> pa.Table:
    """``versions`` versions of each of members 0..n-1, at offsets member * versions + v."""
    count = n * versions
    return pa.table(
        {
            "member_id": pa.array([i // versions for i in range(count)], pa.int64()),
            "member_partition": pa.array([1] * count, pa.int32()),
            "member_offset": pa.array(range(count), pa.int64()),
            "member_digest": pa.array([i * 3 for i in range(count)], pa.int64()),
            "tombstone": [i % versions == versions - 1 for i in range(count)],
        }
    )


def rows_of(connection: sa.Connection, table: sa.Table) -> list[dict[str, Any]]:
    key = list(table.primary_key.columns)
    return [dict(r._mapping) for r in connection.execute(sa.select(table).order_by(*key))]


# A joined record, an unmatched and a dead letter of one board, all naming source (0, 5); the
# unmatched record sits at the same (partition, offset) of its own topic as the joined one.
JOINED = {
    "board_id": "b5",
    "member_id": HIGH,
    "source_partition": 0,
    "source_offset": 5,
    "detail_partition": 2,
    "detail_offset": HIGH,
    "digest": LOW,
    "board_digest": HIGH,
    "member_partition": INT_HIGH,
    "member_offset": LOW,
    "member_digest": 0,
}
UNMATCHED = {
    "board_id": "b5",
    "source_partition": 0,
    "source_offset": 5,
    "board_digest": 1,
    "record_partition": 2,
    "record_offset": HIGH,
}
DEAD_LETTER = {
    "board_id": None,
    "source_partition": 0,
    "source_offset": 5,
    "record_partition": 0,
    "record_offset": 0,
}
NULL_OUTPUT = dict.fromkeys(
    ("board_id", "member_id", "digest", "board_digest", "member_partition", "member_offset"),
    None,
) | {"member_digest": None}


def fill_outputs(connection: sa.Connection) -> None:
    LEDGER.append(
        connection, LEDGER.output_table, LEDGER.outputs("joined", pa.Table.from_pylist([JOINED]))
    )
    for holder, row in (("unmatched", UNMATCHED), ("dead_lettered", DEAD_LETTER)):
        LEDGER.append(
            connection, LEDGER.output_table, LEDGER.outputs(holder, pa.Table.from_pylist([row]))
        )


def test_every_column_round_trips(engine: Engine, path: str) -> None:
    texts = ["", "a,b", 'quote " and ""', "line\nbreak", "ünïcødé ✓", "\\N", "NULL", " "]
    sources = pa.table(
        {
            "board_id": [*texts, None, "lo", "hi"],
            "source_partition": pa.array([*range(len(texts)), 0, INT_LOW, INT_HIGH], pa.int32()),
            "source_offset": pa.array([*range(len(texts)), 99, LOW, HIGH], pa.int64()),
            "board_digest": pa.array([*range(len(texts)), None, LOW, HIGH], pa.int64()),
        }
    )
    members = pa.table(
        {
            "member_id": pa.array([None, LOW, HIGH], pa.int64()),
            "member_partition": pa.array([0, INT_LOW, INT_HIGH], pa.int32()),
            "member_offset": pa.array([0, LOW, HIGH], pa.int64()),
            "member_digest": pa.array([None, HIGH, LOW], pa.int64()),
            "tombstone": [True, False, True],
        }
    )
    refused = pa.table(
        {
            "source_topic": ["member", "board-detail"],
            "source_partition": pa.array([INT_HIGH, 0], pa.int32()),
            "source_offset": pa.array([HIGH, LOW], pa.int64()),
        }
    )
    with engine.begin() as connection:
        LEDGER.append(connection, LEDGER.source_table, sources)
        LEDGER.append(connection, LEDGER.member_table, members)
        LEDGER.append(connection, LEDGER.refused_table, refused)
        fill_outputs(connection)
    with engine.connect() as connection:
        assert rows_of(connection, LEDGER.source_table) == sorted(
            sources.to_pylist(), key=lambda r: (r["source_partition"], r["source_offset"])
        )
        assert rows_of(connection, LEDGER.member_table) == sorted(
            members.to_pylist(), key=lambda r: (r["member_partition"], r["member_offset"])
        )
        assert rows_of(connection, LEDGER.refused_table) == [
            {"source_topic": "board-detail", "source_partition": 0, "source_offset": LOW},
            {"source_topic": "member", "source_partition": INT_HIGH, "source_offset": HIGH},
        ]
        joined = {k: v for k, v in JOINED.items() if not k.startswith("detail_")}
        assert rows_of(connection, LEDGER.output_table) == [
            NULL_OUTPUT | DEAD_LETTER | {"holder": "dead_lettered"},
            joined | {"holder": "joined", "record_partition": 2, "record_offset": HIGH},
            NULL_OUTPUT | UNMATCHED | {"holder": "unmatched"},
        ]
        # Looked up, each comes back in its reader's columns and Arrow types.
        assert LEDGER.details_at(connection, [(2, HIGH)]).to_pylist() == [JOINED]
        assert LEDGER.details_at(connection, [(2, HIGH)]).schema == pa.schema(
            [(n, pa.int32() if n.endswith("_partition") else pa.int64()) for n in JOINED]
        ).set(0, pa.field("board_id", pa.string()))
        found = LEDGER.sources_at(connection, [(INT_LOW, LOW), (INT_HIGH, HIGH), (0, 0)])
        assert found.to_pylist() == [
            {
                "board_id": "lo",
                "source_partition": INT_LOW,
                "source_offset": LOW,
                "board_digest": LOW,
            },
            {"board_id": "", "source_partition": 0, "source_offset": 0, "board_digest": 0},
            {
                "board_id": "hi",
                "source_partition": INT_HIGH,
                "source_offset": HIGH,
                "board_digest": HIGH,
            },
        ]
        assert found.schema == ledger.arrow_schema(LEDGER.source_table)
        assert LEDGER.members_at(connection, [(0, 0)]).to_pylist() == [members.to_pylist()[0]]


def test_lookups_return_exactly_the_keys_rows(engine: Engine) -> None:
    with engine.begin() as connection:
        LEDGER.append(connection, LEDGER.source_table, source_rows(10))
        LEDGER.append(connection, LEDGER.member_table, member_rows(5, versions=3))
        LEDGER.append(
            connection,
            LEDGER.refused_table,
            pa.table(
                {
                    "source_topic": ["member", "board"],
                    "source_partition": [1, 1],
                    "source_offset": [4, 4],
                }
            ),
        )
        fill_outputs(connection)
    with engine.connect() as connection:
        found = LEDGER.sources_at(connection, [(0, 3), (0, 1), (0, 3), (0, 10), (1, 1), (None, 1)])
        assert found["source_offset"].to_pylist() == [1, 3]
        assert found["board_id"].to_pylist() == ["b1", "b3"]
        assert LEDGER.sources_at(connection, []).num_rows == 0
        assert LEDGER.sources_at(connection, []).schema == ledger.arrow_schema(LEDGER.source_table)
        at = LEDGER.outputs_at(connection, [(0, 5), (0, 6)])
        assert at["holder"].to_pylist() == ["dead_lettered", "joined", "unmatched"]
        assert LEDGER.outputs_at(connection, [(5, 0)]).num_rows == 0
        # Joined records only: the unmatched record of b5 shares its board and its position.
        assert LEDGER.outputs_of(connection, ["b5", "b6"]).to_pylist() == [JOINED]
        assert LEDGER.outputs_of(connection, ["b6"]).num_rows == 0
        assert LEDGER.details_at(connection, [(2, HIGH), (0, 0)]).to_pylist() == [JOINED]
        assert LEDGER.details_at(connection, [(2, HIGH - 1)]).num_rows == 0
        assert LEDGER.members_at(connection, [(1, 4), (1, 15), (0, 4)])[
            "member_offset"
        ].to_pylist() == [4]
        versions = LEDGER.members_of(connection, [3, 1, 99])
        assert versions["member_id"].to_pylist() == [1, 1, 1, 3, 3, 3]
        assert versions["member_offset"].to_pylist() == [3, 4, 5, 9, 10, 11]
        assert versions["tombstone"].to_pylist() == [False, False, True] * 2
        assert LEDGER.refused_at(connection, "member", [(1, 4), (1, 5)]).to_pylist() == [
            {"source_topic": "member", "source_partition": 1, "source_offset": 4}
        ]


@pytest.mark.parametrize("n", sorted({OFFSETS - 1, OFFSETS, OFFSETS + 1, IDS, IDS + 1, 2000}))
def test_lookups_span_chunks(engine: Engine, n: int) -> None:
    """Every requested key's row, across chunk boundaries, with no statement over SQLite's 999
    bound parameters."""
    with engine.begin() as connection:
        for p in (0, 1):
            LEDGER.append(connection, LEDGER.source_table, source_rows(2100, partition=p))
        LEDGER.append(connection, LEDGER.member_table, member_rows(2100, versions=2))
    largest = []

    def count(_conn: Any, _cursor: Any, _statement: str, parameters: Any, *_: Any) -> None:
        largest.append(len(parameters))

    sa.event.listen(engine, "before_cursor_execute", count)
    try:
        with engine.connect() as connection:
            wanted = list(range(5, 5 + n))
            absent = [(0, 5000), (3, 7)]
            positions = [(p, o) for o in wanted for p in (1, 0)]
            found = LEDGER.sources_at(connection, [*positions, *absent])
            members = LEDGER.members_of(connection, [*wanted, 10**6])
    finally:
        sa.event.remove(engine, "before_cursor_execute", count)
    assert found.select(["source_partition", "source_offset"]).to_pylist() == [
        {"source_partition": p, "source_offset": o} for p in (0, 1) for o in wanted
    ]
    assert found["board_id"].to_pylist() == [f"b{o}" for o in wanted] * 2
    assert members["member_id"].to_pylist() == [m for m in wanted for _ in range(2)]
    assert max(largest) <= 999


def test_a_replayed_append_changes_nothing(engine: Engine, path: str) -> None:
    sources, members = source_rows(40), member_rows(10, versions=2)
    with engine.begin() as connection:
        LEDGER.append(connection, LEDGER.source_table, sources)
        LEDGER.append(connection, LEDGER.member_table, members)
        fill_outputs(connection)
    with engine.connect() as connection:
        before = {t.name: rows_of(connection, t) for t in LEDGER.metadata.sorted_tables}
    with engine.begin() as connection:
        # The same writes again, one with new rows among replayed ones, one with a row twice.
        assert LEDGER.append(connection, LEDGER.source_table, sources.slice(10, 20)) == 20
        LEDGER.append(
            connection, LEDGER.member_table, pa.concat_tables([members, member_rows(12, 2)])
        )
        fill_outputs(connection)
        twice = pa.concat_tables([source_rows(1, first=500)] * 2)
        LEDGER.append(connection, LEDGER.source_table, twice)
    with engine.connect() as connection:
        after = {t.name: rows_of(connection, t) for t in LEDGER.metadata.sorted_tables}
    assert after["board_detail_reconcile_output"] == before["board_detail_reconcile_output"]
    assert (
        after["board_detail_reconcile_source"]
        == before["board_detail_reconcile_source"] + source_rows(1, first=500).to_pylist()
    )
    assert after["board_detail_reconcile_member"] == member_rows(12, versions=2).to_pylist()


def test_below_keeps_the_record_at_the_earliest_offset(engine: Engine) -> None:
    with engine.begin() as connection:
        for p in (0, 1, 2):
            LEDGER.append(connection, LEDGER.source_table, source_rows(10, partition=p))
        LEDGER.append(connection, LEDGER.member_table, member_rows(10))
        fill_outputs(connection)
    with engine.connect() as connection:
        gone = LEDGER.below(connection, "source", {0: 3, 1: 0, 3: 100})
        assert gone.select(["source_partition", "source_offset"]).to_pylist() == [
            {"source_partition": 0, "source_offset": o} for o in (0, 1, 2)
        ]
        assert gone.schema == ledger.arrow_schema(LEDGER.source_table)
        everything = LEDGER.below(connection, "source", {2: 10})
        assert everything["source_offset"].to_pylist() == list(range(10))
        assert LEDGER.below(connection, "source", {}).num_rows == 0
        assert LEDGER.below(connection, "member", {1: 2})["member_offset"].to_pylist() == [0, 1]
        # By each output's own position, and only its holder's.
        assert LEDGER.below(connection, "joined", {2: HIGH}).num_rows == 0
        unmatched = LEDGER.below(connection, "unmatched", {2: HIGH})
        assert unmatched.num_rows == 0
        dead = LEDGER.below(connection, "dead_lettered", {0: 1})
        assert dead.select(["holder", "record_offset"]).to_pylist() == [
            {"holder": "dead_lettered", "record_offset": 0}
        ]
        assert LEDGER.below(connection, "dead_lettered", {0: 0}).num_rows == 0
        with pytest.raises(Exception, match="topic_holder"):
            LEDGER.below(connection, "pending", {0: 1})


def test_the_cursor_moves_forward_only(engine: Engine) -> None:
    with engine.begin() as connection:
        assert LEDGER.cursor(connection) == {}
        LEDGER.advance(connection, {"board": {0: 10, 1: 0}, "member": {0: HIGH}})
        LEDGER.advance(connection, {})
    with engine.begin() as connection:
        assert LEDGER.cursor(connection) == {"board": {0: 10, 1: 0}, "member": {0: HIGH}}
        LEDGER.advance(connection, {"board": {0: 9, 1: 4, 2: 1}})  # 0 replayed from before
        assert LEDGER.cursor(connection) == {"board": {0: 10, 1: 4, 2: 1}, "member": {0: HIGH}}


def test_a_rolled_back_transaction_leaves_nothing(engine: Engine, path: str) -> None:
    class Verdict(Exception):
        pass

    with pytest.raises(Verdict), engine.begin() as connection:
        LEDGER.append(connection, LEDGER.source_table, source_rows(1500))
        LEDGER.append(connection, LEDGER.member_table, member_rows(1500))
        LEDGER.append(
            connection,
            LEDGER.refused_table,
            pa.table({"source_topic": ["member"], "source_partition": [0], "source_offset": [1]}),
        )
        fill_outputs(connection)
        LEDGER.advance(connection, {"board": {0: 1500}})
        assert LEDGER.sources_at(connection, [(0, 1499)]).num_rows == 1  # seen inside
        raise Verdict
    with engine.connect() as connection:
        for table in LEDGER.metadata.sorted_tables:
            assert rows_of(connection, table) == [], table.name
        assert LEDGER.cursor(connection) == {}
    with engine.begin() as connection:  # and the next run's writes go through
        assert LEDGER.append(connection, LEDGER.source_table, source_rows(1500)) == 1500
    with engine.connect() as connection:
        assert len(rows_of(connection, LEDGER.source_table)) == 1500


def test_create_is_idempotent_and_keeps_rows(engine: Engine) -> None:
    with engine.begin() as connection:
        LEDGER.append(connection, LEDGER.source_table, source_rows(3))
    LEDGER.create(engine)
    with engine.connect() as connection:
        assert len(rows_of(connection, LEDGER.source_table)) == 3
    indexes = {i["name"] for i in sa.inspect(engine).get_indexes("board_detail_reconcile_output")}
    named = {"board_detail_reconcile_output_source", "ix_board_detail_reconcile_output_board_id"}
    assert named <= indexes
