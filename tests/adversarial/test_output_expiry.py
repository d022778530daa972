"""Outputs that age out: records of board-detail, board-unmatched and board-dlq deleted (here by
``deleteRecords``, as retention deletes them) while their sources are still in ``board``. An
outcome an earlier run read, or a table row names, outlives its record (``expired_evidence``);
an output deleted before any run read it is ``expired_unseen`` and fails. Incremental and full
runs agree (``world.reconcile``)."""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import OFFSET_END, TopicPartition
from confluent_kafka.admin import OffsetSpec

from boardstream.kafka.clients import admin_client
from boardstream.reconcile import run
from boardstream.reconcile.evidence.run_ledger import FULL, INCREMENTAL
from boardstream.reconcile.reads.snapshot import Snapshot
from boardstream.settings import Settings
from tests.adversarial.conftest import populate
from tests.adversarial.world import (
    board,
    detail_records,
    execute,
    failures,
    load_row,
    reconcile,
    reconcile_as,
    records_of,
    rows,
)
from tests.fixtures import new_database
from tests.pipeline import Pipeline, alter_topics

TIMEOUT_MS = 2_000  # the join's unmatched timeout here: `waits` ends in board-unmatched
RETENTION_MS = 150_000  # board-detail's in the retention test: longer than a run takes here


@pytest.fixture
def expiring(kafka, spark, postgres, tmp_path, request) -> Pipeline:
    """The adversarial data joined and loaded, with `waits` unmatched and the malformed board
    dead-lettered: an outcome in each output topic. Not reconciled yet."""
    pipeline = Pipeline(
        kafka, spark, tmp_path, var_dir=tmp_path, database_url=new_database(postgres, request)
    )
    populate(pipeline)
    pipeline.join(unmatched_timeout_ms=TIMEOUT_MS)
    time.sleep(TIMEOUT_MS / 1000 + 0.5)  # the next run's tick fires the timer
    pipeline.join(unmatched_timeout_ms=TIMEOUT_MS)
    pipeline.sink()
    assert pipeline.unmatched() == {"waits": "member_missing"}
    return pipeline


def delete_all(settings: Settings, *topics: str) -> None:
    """Every record of ``topics`` deleted, as retention would."""
    admin = admin_client(settings)
    doomed = [
        TopicPartition(topic, p, OFFSET_END)
        for topic in topics
        for p in admin.list_topics(topic, timeout=10).topics[topic].partitions
    ]
    for future in admin.delete_records(doomed).values():
        future.result()


def outputs(settings: Settings) -> tuple[str, str, str]:
    return settings.board_detail_topic, settings.unmatched_topic, settings.dlq_topic


def test_outputs_deleted_after_a_run_read_them_keep_their_outcomes(expiring: Pipeline) -> None:
    before = reconcile_as(expiring, FULL)
    assert before.passed, "\n".join(before.summary())
    delete_all(expiring.settings, *outputs(expiring.settings))
    result = reconcile(expiring)
    counts = result.reconciliation.counts
    assert failures(result) == {}, "\n".join(result.summary())
    assert {k: counts[k] for k in ("joined", "unmatched", "dead_lettered", "missing")} == {
        k: before.reconciliation.counts[k] for k in ("joined", "unmatched", "dead_lettered")
    } | {"missing": 0}
    # Every position's outcome now rests on what the ledger kept: 8 + ctl + upd twice + waits
    # + the malformed board, and every row still checked against its record's copy.
    assert counts["expired_evidence"] == 13
    assert counts["unverifiable_in_table"] == 0 and counts["expected_table_rows"] == 10
    # A row altered now is held to the ledger's copy of its deleted record.
    execute(
        expiring.settings.database, "UPDATE board_detail SET title = 'forged' WHERE board_id = 'b2'"
    )
    assert failures(reconcile(expiring)) == {"mismatched": ["b2"]}


def test_a_stale_row_whose_record_and_source_aged_out(expiring: Pipeline) -> None:
    """`upd`'s row is put back to its first record, then that record and its source age out
    while the newer record, the one the sink committed, stays: the row is stale, whatever
    became of the record it names. It was ``unverifiable_in_table`` (reported) and counted as
    an expected row besides, so Great Expectations' row count failed the run instead."""
    settings = expiring.settings
    assert reconcile_as(expiring, FULL).passed  # the ledger holds a copy of every record
    older, newer = detail_records(expiring, "upd")
    load_row(expiring, older)
    (_, _, _), source = records_of(settings, settings.board_topic, "upd")
    detail = (newer["detail_partition"], newer["detail_offset"])
    admin = admin_client(settings)  # held: a collected client fails its futures
    doomed = [
        TopicPartition(settings.board_topic, *source[:2]),
        TopicPartition(settings.board_detail_topic, *detail),
    ]
    for future in admin.delete_records(doomed).values():
        future.result()
    result = reconcile(expiring)
    assert failures(result) == {"stale_in_table": ["upd"]}, "\n".join(result.summary())
    counts = result.reconciliation.counts
    ((table_rows,),) = rows(settings.database, "SELECT count(*) FROM board_detail")
    assert counts["expected_table_rows"] + counts["unverifiable_in_table"] == table_rows


def test_an_output_deleted_between_runs_before_one_read_it(expiring: Pipeline) -> None:
    """A run read everything; a new malformed board is dead-lettered, and the DLQ deletes that
    letter before the next run: the gap from the ledger's cursor to the new start is unseen,
    so that board's position fails as expired_unseen; what the first run read still stands."""
    settings = expiring.settings
    assert reconcile_as(expiring, FULL).passed
    expiring.send(settings.board_topic, b"bad2", b"{not json either", int(time.time() * 1000))
    expiring.join(unmatched_timeout_ms=TIMEOUT_MS)
    delete_all(settings, settings.dlq_topic)
    result = reconcile(expiring)
    assert failures(result) == {"expired_unseen": ["bad2"]}, "\n".join(result.summary())
    assert result.reconciliation.counts["expired_evidence"] == 1  # the first letter, read


@pytest.mark.long
def test_outputs_aged_out_by_retention_keep_their_outcomes(expiring: Pipeline) -> None:
    """Retention itself, not deleteRecords: board-detail by ``retention.ms`` (time deletes
    even a partition's active segment), board-unmatched and board-dlq by ``retention.bytes``
    (segments rolled by a record of a key each holds: same key, same partition), after a run
    read the old records, while the jobs go on and the new records outlive the test."""
    settings = expiring.settings
    reconcile_as(expiring, FULL)
    read_at = time.monotonic()
    detail, unmatched, dlq = outputs(settings)
    configs = {
        detail: {"retention.ms": str(RETENTION_MS), "segment.ms": "100"},
        unmatched: {"retention.bytes": "1", "segment.ms": "100"},
        dlq: {"retention.bytes": "1", "segment.ms": "100"},
    }
    alter_topics(settings, configs)
    # Past the retention of every record written before the run; what comes now outlives it.
    time.sleep(max(0.0, RETENTION_MS / 1000 + 5 - (time.monotonic() - read_at)))
    now = int(time.time() * 1000)
    board(expiring, "b1", 1, now, title="b1 again")
    board(expiring, "waits", 99, now + 1)
    expiring.send(settings.board_topic, b"bad", b"{still not json", now + 2)
    expiring.join(unmatched_timeout_ms=TIMEOUT_MS)
    expiring.sink()
    time.sleep(TIMEOUT_MS / 1000 + 0.5)
    expiring.join(unmatched_timeout_ms=TIMEOUT_MS)
    deadline = time.monotonic() + 60  # the broker looks every 10 s
    while time.monotonic() < deadline:
        starts = {topic: earliest(settings, topic) for topic in outputs(settings)}
        if all(sum(start.values()) for start in starts.values()):
            break
        time.sleep(2)
    assert all(sum(start.values()) for start in starts.values()), starts
    result = reconcile(expiring)
    assert failures(result) == {}, "\n".join(result.summary())
    risks = [line.strip() for line in result.summary() if " may expire before " in line]
    assert [risk.split(":")[0] for risk in risks] == [
        f"{topic} may expire before {settings.board_topic}" for topic in (detail, unmatched, dlq)
    ]
    # Every record below a topic's new start was one the first run read.
    deleted = sum(sum(start.values()) for start in starts.values())
    assert result.reconciliation.counts["expired_evidence"] == deleted >= 13


def earliest(settings: Settings, topic: str, spec: OffsetSpec | None = None) -> dict[int, int]:
    """Where each partition of ``topic`` starts now (or where ``spec`` says)."""
    admin = admin_client(settings)
    partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
    wanted = {TopicPartition(topic, p): spec or OffsetSpec.earliest() for p in partitions}
    return {tp.partition: f.result().offset for tp, f in admin.list_offsets(wanted).items()}


@pytest.mark.parametrize("kind", [FULL, INCREMENTAL])
def test_records_deleted_while_a_run_reads_them_are_left_out(
    expiring: Pipeline, monkeypatch, caplog, kind: str
) -> None:
    """Retention deletes records between a run's snapshot and its read (a full run over busy
    topics with retention in minutes met it: Spark's source skips what is gone, and 287 outputs
    came out ``extra``). The run takes its start offsets after its read instead, as a run
    started just after the deletion would: here every record the first run read goes from
    board and the outputs under the second run, and only the new b9 is left to check."""
    settings = expiring.settings
    assert reconcile_as(expiring, FULL).passed
    topics = (settings.board_topic, *outputs(settings))
    read = {topic: earliest(settings, topic, OffsetSpec.latest()) for topic in topics}
    board(expiring, "b9", 1, int(time.time() * 1000))
    expiring.join(unmatched_timeout_ms=TIMEOUT_MS)
    expiring.sink()
    snapshot_of = run.take_snapshot

    def then_retention(*args: object) -> Snapshot:
        snapshot = snapshot_of(*args)
        doomed = [TopicPartition(t, p, end) for t, ends in read.items() for p, end in ends.items()]
        admin = admin_client(settings)  # held: a collected client fails its futures
        for future in admin.delete_records(doomed).values():
            future.result()
        return snapshot

    monkeypatch.setattr(run, "take_snapshot", then_retention)
    with caplog.at_level(logging.INFO, logger="boardstream.reconcile.reads.snapshot"):
        result = reconcile_as(expiring, kind)
    assert failures(result) == {}, "\n".join(result.summary())
    counts = result.reconciliation.counts
    assert (counts["source"], counts["joined"], counts["extra"]) == (1, 1, 0)
    (moved,) = [r.getMessage() for r in caplog.records if "deleted while this run" in r.message]
    assert f"{settings.board_topic}[" in moved


def test_outputs_deleted_before_any_run_read_them(expiring: Pipeline) -> None:
    """No run has read anything when every output record goes. The table's rows name each
    board's newest record, so those outcomes stand (a row is its record's content); the older
    record of `upd`, the unmatched `waits` and the malformed board's dead letter are proven by
    nothing, and fail."""
    delete_all(expiring.settings, *outputs(expiring.settings))
    result = reconcile(expiring)
    assert failures(result) == {"expired_unseen": ["bad", "upd", "waits"]}, "\n".join(
        result.summary()
    )
    counts = result.reconciliation.counts
    assert (counts["missing"], counts["expired_evidence"], counts["joined"]) == (0, 10, 10)
