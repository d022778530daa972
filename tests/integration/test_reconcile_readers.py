"""The readers' output frames carry each record's own position, which the digest ledger keys
outputs by (#22): checked on frames shaped like the Kafka connector's, in a real Spark session."""

from __future__ import annotations

import json

import pytest

from boardstream.pipelines import shipped
from boardstream.reconcile.layout import ReconcileLayout
from boardstream.reconcile.reads import readers

RAW = readers.KAFKA_COLUMNS


def _raw(spark, records: list[tuple[int, int, dict]]):
    """Kafka-shaped rows: (partition, offset, value as JSON)."""
    return spark.createDataFrame(
        [
            (b"k", json.dumps(value).encode(), "t", partition, offset, None)
            for partition, offset, value in records
        ],
        RAW,
    )


@pytest.mark.parametrize(
    ("pipeline", "record"),
    [
        ("board_detail", {"board_id": "b1", "board_partition": 0, "board_offset": 7}),
        ("orders", {"order_id": "b1", "stream_partition": 0, "stream_offset": 7}),
    ],
)
def test_unmatched_records_carry_their_own_position(spark, pipeline: str, record: dict) -> None:
    """Read by the pipeline's own layout: its id and position columns, under the checks' roles."""
    raw = _raw(spark, [(2, 40, record)])
    rows = readers.unmatched(raw, ReconcileLayout.of(shipped(pipeline))).select(
        "board_id", "source_partition", "source_offset", "record_partition", "record_offset"
    )
    assert [tuple(r) for r in rows.collect()] == [("b1", 0, 7, 2, 40)]


def test_dead_letters_carry_their_own_position_and_keep_to_their_topic(spark) -> None:
    raw = _raw(
        spark,
        [
            (1, 11, {"source_topic": "board", "partition": 0, "offset": 3, "error": "e"}),
            (1, 12, {"source_topic": "member", "partition": 2, "offset": 5, "error": "e"}),
        ],
    )
    rows = readers.dead_letters(raw, "board").select(
        "board_id", "source_partition", "source_offset", "record_partition", "record_offset"
    )
    assert [tuple(r) for r in rows.collect()] == [(None, 0, 3, 1, 11)]
