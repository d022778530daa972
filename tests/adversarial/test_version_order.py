"""A board's versions reach ``board-detail`` out of the source's order, and the table keeps the
newest in ``board`` (docs/RECONCILIATION.md, "Which record is a board's newest").

The join is keyed by member, so two versions of one board that name different members are not
kept in order: v1 waits for its absent member, v2 (a present member) is joined at once, and when
v1's member arrives v1 is written to ``board-detail`` after v2. One pipeline carries the
scenario; its tests run in this order, the last one leaving a finding behind.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from boardstream.reconcile.evidence.run_ledger import FULL
from boardstream.reconcile.repair import repair
from tests.adversarial.conftest import populate
from tests.adversarial.world import (
    NOW,
    board,
    detail_records,
    failures,
    load_row,
    reconcile,
    reconcile_as,
    rows,
)
from tests.fixtures import new_database
from tests.pipeline import Pipeline

REKEYED = "rekeyed"  # v1 names ABSENT, v2 names member 2
ABSENT = 50


def table_row(pipeline: Pipeline, board_id: str) -> tuple[str, int, int]:
    """(title, board_offset, detail_offset) of ``board_id``'s one row."""
    ((title, board_offset, detail_offset),) = rows(
        pipeline.settings.database,
        "SELECT title, board_offset, detail_offset FROM board_detail WHERE board_id = :b",
        b=board_id,
    )
    return title, board_offset, detail_offset


def versions(pipeline: Pipeline, board_id: str) -> dict[str, dict[str, Any]]:
    """``board_id``'s board-detail records by title."""
    return {record["title"]: record for record in detail_records(pipeline, board_id)}


@pytest.fixture(scope="module")
def rekeyed(kafka, spark, postgres, tmp_path_factory, request) -> Iterator[Pipeline]:
    """The populated world with ``rekeyed``'s v1 waiting for its member and v2 joined, reconciled
    (full and incremental: both PASSED, nothing superseded yet), then v1's member arrived, the
    join and the sink run again."""
    workdir = tmp_path_factory.mktemp("rekeyed")
    pipeline = Pipeline(
        kafka, spark, workdir, var_dir=workdir, database_url=new_database(postgres, request)
    )
    populate(pipeline)
    board(pipeline, REKEYED, ABSENT, NOW + 30, title="v1")
    board(pipeline, REKEYED, 2, NOW + 31, title="v2")
    pipeline.join()
    pipeline.sink()
    before = reconcile(pipeline)
    assert before.passed, "\n".join(before.summary())
    assert before.reconciliation.counts["superseded"] == 0
    assert table_row(pipeline, REKEYED)[0] == "v2"
    pipeline.member(ABSENT, "late", ts=NOW + 40)
    pipeline.join()
    pipeline.sink()
    yield pipeline


def test_the_table_keeps_the_newer_version_written_first(rekeyed: Pipeline) -> None:
    """v1 reached board-detail after v2: the sink skipped it, every run PASSES and counts it."""
    written = versions(rekeyed, REKEYED)
    assert written["v1"]["detail_offset"] > written["v2"]["detail_offset"]
    assert written["v1"]["board_offset"] < written["v2"]["board_offset"]
    assert table_row(rekeyed, REKEYED) == (
        "v2",
        written["v2"]["board_offset"],
        written["v2"]["detail_offset"],
    )
    result = reconcile(rekeyed)  # full and incremental, alike
    assert result.passed, "\n".join(result.summary())
    superseded = result.reconciliation.findings["superseded"]
    assert (superseded.count, superseded.examples) == (1, [REKEYED])


def test_a_row_of_the_older_version_at_the_later_offset_is_stale(rekeyed: Pipeline) -> None:
    """The row forced back to v1, exactly as the sink would have loaded it: v1's board-detail
    offset is the higher one, its board offset the older. Repair reloads v2."""
    written = versions(rekeyed, REKEYED)
    load_row(rekeyed, written["v1"])
    try:
        assert failures(reconcile(rekeyed)) == {"stale_in_table": [REKEYED]}
        found = reconcile_as(rekeyed, FULL)
        repair(
            rekeyed.spark,
            rekeyed.settings,
            found.run_id,
            join_checkpoint=rekeyed.workdir / f"{rekeyed.settings.board_topic}-join",
        )
        assert table_row(rekeyed, REKEYED)[0] == "v2"
        after = reconcile(rekeyed)
        assert after.passed, "\n".join(after.summary())
    finally:
        load_row(rekeyed, written["v2"])


def test_a_board_whose_versions_moved_partition_is_a_finding(rekeyed: Pipeline) -> None:
    """``hopped``'s versions in two board partitions (another partitioner, or the topic's
    partitions changed): their offsets have no order. The table keeps the version of the
    higher partition, the order every reader shares, and the run FAILS naming the board.
    Last: the finding stays."""
    settings = rekeyed.settings
    producer = Producer(settings.to_confluent())
    for partition, title in ((2, "first, partition 2"), (0, "then, partition 0")):
        value = {
            "id": "hopped",
            "member_id": 1,
            "title": title,
            "created_ts": NOW + 50,
            "created_at": "2025-01-02T00:00:00",
            "modified_at": "2025-01-02T00:00:00",
        }
        producer.produce(
            settings.board_topic,
            json.dumps(value).encode(),
            b"hopped",
            partition=partition,
            timestamp=NOW + 50,
        )
        assert producer.flush(10) == 0
    rekeyed.join()
    rekeyed.sink()
    assert table_row(rekeyed, "hopped")[0] == "first, partition 2"
    assert failures(reconcile(rekeyed)) == {"moved_partition": ["hopped"]}
