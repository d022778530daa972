"""An incremental run's inputs give the same facts as a full run's for the keys they cover
(#22): a baseline in the digest ledger, new records past its cursor, the keys closed, and
``checks.facts`` on both, in a real Spark session over a real SQLite ledger and table."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from boardstream import database
from boardstream.reconcile.checks import arrow_checks
from boardstream.reconcile.checks import spark_checks as checks
from boardstream.reconcile.incremental import affected, baseline
from boardstream.reconcile.incremental import inputs as incremental
from boardstream.reconcile.incremental.affected import Keys
from boardstream.reconcile.incremental.store import Store
from boardstream.reconcile.reads import readers
from boardstream.reconcile.reads.expired import EXPIRED
from boardstream.reconcile.reads.snapshot import JobProgress, Snapshot
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import Settings
from boardstream.sink import table as sink_table
from tests.store import FACTS, LEDGER

BOARD = {"title": "t", "body": "b", "created_ts": 1, "created_at": "c", "modified_at": "m"}
PROFILE = {"nickname": "n", "city": "x", "phone": "p", "modified_at": "mm"}


def detail(board: str, member: int, source: int, version: int) -> dict:
    return {
        **BOARD,
        "outcome": "joined",
        "board_id": board,
        "member_id": member,
        "nickname": "n",
        "city": "x",
        "phone": "p",
        "member_modified_at": "mm",
        "board_partition": 0,
        "board_offset": source,
        "member_partition": 1,
        "member_offset": version,
    }


def raw(spark, records: list[tuple]):
    """Kafka-shaped rows: (key, partition, offset, value)."""
    return spark.createDataFrame(
        [
            (k and k.encode(), v and json.dumps(v).encode(), "t", p, o, None)
            for k, p, o, v in records
        ],
        readers.KAFKA_COLUMNS,
    )


BASE = {
    "board": [("b1", 0, 3, {**BOARD, "member_id": 7}), ("b2", 0, 4, {**BOARD, "member_id": 9})],
    "board-detail": [(None, 1, 5, detail("b1", 7, 3, 9))],
    "board-unmatched": [(None, 2, 11, {**detail("b2", 9, 4, 0), "outcome": "unmatched"})],
    "member": [("7", 1, 9, PROFILE), ("8", 1, 12, PROFILE)],
}
NEW = {
    "board": [("b1", 0, 7, {**BOARD, "member_id": 7}), ("b3", 0, 8, {**BOARD, "member_id": 8})],
    "board-detail": [(None, 1, 6, detail("b1", 7, 7, 9)), (None, 1, 7, detail("b3", 8, 8, 12))],
    "board-unmatched": [],
    "member": [],
}


def frames(
    spark, target: ReconcileTarget, parts: list[dict], table: pa.Table
) -> checks.CheckInputs:
    def topic(name: str):
        return raw(spark, [r for part in parts for r in part[name]])

    def read(frame: DataFrame) -> DataFrame:  # outputs read from their topics, not evidence
        return frame.withColumn(EXPIRED, F.lit(False))

    dlq = raw(spark, [])
    empty = spark.createDataFrame([], "detail_partition int, detail_offset bigint")
    layout, table_read = target.layout, readers.TableRead(table, [])
    return checks.CheckInputs(
        sources=readers.sources(topic("board"), layout),
        details=read(readers.details(topic("board-detail"), layout)),
        unmatched=read(readers.unmatched(topic("board-unmatched"), layout)),
        board_dead_letters=read(readers.dead_letters(dlq, target.topics.stream)),
        sink_dead_letters=empty,
        refused_members=empty.toDF("member_partition", "member_offset"),
        members=readers.members(topic("member"), layout),
        table=readers.table_rows(spark, table_read, layout),
        waiting=readers.pending(spark, target.layout, "", None),
        table_read=table_read,
    )


def test_the_keys_new_data_touches_get_a_full_runs_facts(spark, tmp_path: Path) -> None:
    settings = Settings(var_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'db.sqlite'}")
    engine = database.engine(settings.database)
    LEDGER.create(engine)
    FACTS.create(engine)
    sink_table.create(engine)
    cut = {"board": {0: 5}, "board-detail": {1: 6}, "board-unmatched": {2: 12}, "member": {1: 13}}
    end = {"board": {0: 9}, "board-detail": {1: 8}, "board-unmatched": {2: 12}, "member": {1: 13}}
    joined = JobProgress(1, {"board": end["board"], "member": end["member"]})
    sink = JobProgress(1, {"board-detail": end["board-detail"]})
    earliest = {
        "board": {0: 0},
        "board-detail": {1: 0},
        "board-unmatched": {2: 0},
        "member": {1: 0},
        "board-dlq": {},
    }
    snapshot = Snapshot(datetime.now(UTC), earliest, end | {"board-dlq": {}}, joined, sink)
    target = ReconcileTarget.shipped(settings)
    store = Store.of(target)
    layout = target.layout
    table = readers.read_table(settings, target).rows  # empty: every board missing in the table

    with engine.begin() as connection:
        baseline.record(
            connection,
            LEDGER,
            checks.Records.of(frames(spark, target, [BASE], table), target),
            cut,
        )
    new = checks.Records(
        sources=readers.sources(raw(spark, NEW["board"]), layout).toArrow(),
        details=readers.details(raw(spark, NEW["board-detail"]), layout).toArrow(),
        unmatched=readers.unmatched(raw(spark, []), layout).toArrow(),
        dead_letters=readers.dead_letters(raw(spark, []), target.topics.stream).toArrow(),
        refused=pa.table(
            {
                "source_topic": pa.array([], pa.string()),
                "source_partition": pa.array([], pa.int32()),
                "source_offset": pa.array([], pa.int64()),
            }
        ),
        members=readers.members(raw(spark, []), layout).toArrow(),
    )
    waiting = readers.pending(spark, target.layout, "", None).toArrow()
    options = checks.ReconcileOptions()

    with engine.connect() as connection:
        keys = affected.close(
            incremental.seeds(
                new, incremental.carried(connection, store, target, snapshot, waiting)
            ),
            *incremental.lookups(connection, LEDGER, new),
        )
        assert keys == Keys.of([(0, 3), (0, 7), (0, 8)], ["b1", "b3"])
        rows = readers.read_table(settings, target, sorted(keys.boards))
        partial = incremental.inputs_for(
            spark, connection, LEDGER, target, snapshot, keys, new, rows, waiting, unseen=()
        )

    def facts(inputs: checks.CheckInputs) -> list[tuple]:
        bounds = checks.bounds(inputs.table_read, False, target.topics, snapshot, None, 0, options)
        return sorted(tuple(r) for r in checks.facts(inputs, bounds).collect())

    whole = facts(frames(spark, target, [BASE, NEW], table))
    found = arrow_checks.evaluate(partial, settings, target.topics, snapshot, None, 0, options)
    mine = sorted(zip(*(found.column(c).to_pylist() for c in checks.FACT_COLUMNS), strict=True))
    covered = [
        f for f in whole if (f[1], f[2]) in keys.positions or (f[1] is None and f[3] in keys.boards)
    ]
    assert mine == covered
    assert ("missing_in_table", None, None, "b1") in mine and ("joined", 0, 7, "b1") in mine
    assert not any(f[3] == "b2" for f in mine)
