"""A full run's records land in the digest ledger (#22): the readers' frames of Kafka-shaped
records, in a real Spark session, recorded into a real SQLite ledger and looked up again."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from sqlalchemy.engine import Engine

from boardstream import database
from boardstream.reconcile.checks.spark_checks import CheckInputs, Records
from boardstream.reconcile.incremental import baseline
from boardstream.reconcile.reads import readers
from boardstream.reconcile.reads.expired import EXPIRED
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import Settings
from tests.store import LEDGER

BOARD = {
    "member_id": 7,
    "title": "t",
    "body": "b",
    "created_ts": 1,
    "created_at": "c",
    "modified_at": "m",
}
DETAIL = {
    **BOARD,
    "outcome": "joined",
    "board_id": "b1",
    "nickname": "n",
    "city": "x",
    "phone": "p",
    "member_modified_at": "mm",
    "board_partition": 0,
    "board_offset": 3,
    "member_partition": 1,
    "member_offset": 9,
}


def _raw(spark, records: list[tuple[str | None, int, int, dict | None]]):
    """Kafka-shaped rows: (key, partition, offset, value as JSON or a tombstone)."""
    return spark.createDataFrame(
        [
            (key and key.encode(), value and json.dumps(value).encode(), "t", p, o, None)
            for key, p, o, value in records
        ],
        readers.KAFKA_COLUMNS,
    )


def _letter(topic: str, partition: int, offset: int) -> dict:
    return {"source_topic": topic, "partition": partition, "offset": offset, "error": "e"}


@pytest.mark.parametrize("staged", [False, True], ids=["in_the_transaction", "staged"])
def test_a_full_runs_records_are_in_the_ledger_and_its_cursor_at_the_snapshot(
    spark, tmp_path: Path, staged: bool
) -> None:
    """Written in the transaction (an incremental run's way) or staged ahead of it (a full
    run's), the ledger holds the same rows and its cursor is at the snapshot."""
    settings = Settings()
    target = ReconcileTarget.shipped(settings)
    layout = target.layout
    dlq = _raw(
        spark,
        [
            (None, 0, 20, _letter(settings.board_topic, 0, 4)),
            (None, 0, 21, _letter(settings.board_detail_topic, 1, 8)),
            (None, 0, 22, _letter(settings.member_topic, 2, 6)),
        ],
    )
    empty = spark.createDataFrame([], "x int")

    def read(frame: DataFrame) -> DataFrame:
        return frame.withColumn(EXPIRED, F.lit(False))

    # Evidence of a record its topic deleted (a ledger copy, a table row) is no record read.
    evidence = readers.details(_raw(spark, [(None, 1, 2, DETAIL)]), layout).withColumn(
        EXPIRED, F.lit(True)
    )
    inputs = CheckInputs(
        sources=readers.sources(_raw(spark, [("b1", 0, 3, BOARD)]), layout),
        details=read(readers.details(_raw(spark, [(None, 1, 5, DETAIL)]), layout)).unionByName(
            evidence
        ),
        unmatched=read(
            readers.unmatched(
                _raw(spark, [(None, 2, 11, {**DETAIL, "outcome": "unmatched", "board_offset": 4})]),
                layout,
            )
        ),
        board_dead_letters=read(readers.dead_letters(dlq, settings.board_topic)),
        sink_dead_letters=readers.dead_letters(dlq, settings.board_detail_topic)
        .select("source_partition", "source_offset")
        .toDF("detail_partition", "detail_offset"),
        refused_members=readers.dead_letters(dlq, settings.member_topic)
        .select("source_partition", "source_offset")
        .toDF("member_partition", "member_offset"),
        members=readers.members(
            _raw(spark, [("7", 1, 9, {"nickname": "n"}), ("7", 1, 10, None)]), layout
        ),
        table=empty,
        waiting=empty,
        table_read=readers.TableRead(pa.table({}), []),
    )
    latest = {settings.board_topic: {0: 4}, settings.board_detail_topic: {1: 6}}
    engine: Engine = database.engine(f"sqlite:///{tmp_path / 'ledger.db'}")
    LEDGER.create(engine)

    records = Records.of(inputs, target)
    ahead = baseline.stage(engine, LEDGER, records) if staged else None
    with engine.begin() as connection:
        if ahead:
            written = baseline.record_staged(connection, LEDGER, ahead, latest)
        else:
            written = baseline.record(connection, LEDGER, records, latest)
    assert written == {
        "sources": 1,
        "joined": 1,
        "unmatched": 1,
        "dead_lettered": 1,
        "members": 2,
        "refused": 2,
    }

    with engine.connect() as connection:
        details = LEDGER.details_at(connection, [(1, 2), (1, 5)]).to_pylist()
        read = inputs.details.where(~F.col(EXPIRED)).drop(EXPIRED)
        assert details == read.toArrow().to_pylist()  # not the evidence at 1@2
        held = LEDGER.outputs_at(connection, [(0, 4)]).to_pylist()
        assert sorted((r["holder"], r["record_partition"], r["record_offset"]) for r in held) == [
            ("dead_lettered", 0, 20),
            ("unmatched", 2, 11),
        ]
        assert LEDGER.sources_at(connection, [(0, 3)]).to_pylist() == (
            inputs.sources.toArrow().to_pylist()
        )
        versions = LEDGER.members_of(connection, [7]).to_pylist()
        assert [(v["member_offset"], v["tombstone"]) for v in versions] == [(9, False), (10, True)]
        refused = LEDGER.refused_at(connection, settings.member_topic, [(2, 6), (2, 7)])
        assert refused.to_pylist() == [
            {"source_topic": settings.member_topic, "source_partition": 2, "source_offset": 6}
        ]
        assert LEDGER.cursor(connection) == latest
