"""Reconciliation on the real broker, Spark and PostgreSQL: a clean run passes with exact
counts; each injected fault is reported with exactly the affected ids."""

from __future__ import annotations

import json
import logging
import re

import pytest
import sqlalchemy as sa
from confluent_kafka import Producer

from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import TopicSpec, create_topics
from boardstream.reconcile.checks.spark_checks import BALANCE, FAILING
from boardstream.reconcile.repair import repair
from boardstream.reconcile.run import RunResult, reconcile_once
from boardstream.settings import Settings
from boardstream.sink.job import SinkJobConfig
from tests.fixtures import cli, new_database
from tests.pipeline import Pipeline, consume_all, run_sink
from tests.store import RUNS

BOARDS = [f"b{i}" for i in range(1, 9)]


@pytest.fixture
def database_url(postgres, request) -> str:
    """A database of its own, so no other test's board_detail rows show up as extra."""
    return new_database(postgres, request)


@pytest.fixture
def pipeline(kafka, spark, tmp_path, database_url, t0: int) -> Pipeline:
    """8 joined boards, one waiting for a member that has not come, one malformed board.
    Timestamps are current: older ones would fall to the topics' 7-day retention."""
    pipeline = Pipeline(kafka, spark, tmp_path, var_dir=tmp_path, database_url=database_url)
    for member_id in range(1, 5):
        pipeline.member(member_id, f"m{member_id}", ts=t0)
    for i, board_id in enumerate(BOARDS):
        pipeline.board(board_id, member_id=i % 4 + 1, ts=t0 + 1 + i)
    pipeline.board("waits", member_id=99, ts=t0 + 20)
    pipeline.send(pipeline.settings.board_topic, b"bad", b"{not json", t0 + 21)
    pipeline.join()
    pipeline.sink()
    return pipeline


def join_checkpoint(pipeline: Pipeline):
    return pipeline.workdir / f"{pipeline.settings.board_topic}-join"


def reconcile(pipeline: Pipeline, settings: Settings | None = None, sink=None) -> RunResult:
    return reconcile_once(
        pipeline.spark,
        settings or pipeline.settings,
        "test",
        join_checkpoint=join_checkpoint(pipeline),
        sink_checkpoint=sink or pipeline.workdir / f"{pipeline.settings.board_topic}-sink",
    )


def failures(result: RunResult) -> dict[str, list[str]]:
    return {
        kind: f.examples
        for kind, f in result.reconciliation.findings.items()
        if f.count and kind in FAILING
    }


def execute(database_url: str, *statements: str) -> None:
    engine = sa.create_engine(database_url)
    with engine.begin() as connection:
        for statement in statements:
            connection.execute(sa.text(statement))
    engine.dispose()


def test_a_run_leaves_nothing_cached_in_its_session(pipeline: Pipeline) -> None:
    """The DAGs and benches reuse one Spark session across runs: a frame a run caches and does
    not drop would hold its records (the whole DLQ, every board-detail record) for good."""
    pipeline.spark.catalog.clearCache()
    assert reconcile(pipeline).passed
    assert pipeline.spark._jsparkSession.sharedState().cacheManager().isEmpty()


@pytest.mark.parametrize("engine", ["DuckDB, in process", "Spark"])
def test_clean_run_passes_with_exact_counts(pipeline: Pipeline, engine: str, caplog) -> None:
    """Alike in either engine of a full run's checks: DuckDB up to the size setting, Spark
    above it (0: always Spark)."""
    limit = 0 if engine == "Spark" else 1_000
    settings = pipeline.settings.model_copy(update={"reconcile_in_process_max_records": limit})
    with caplog.at_level(logging.INFO, "boardstream.reconcile.checks.spark_checks"):
        result = reconcile(pipeline, settings)
    [chosen] = [r.getMessage() for r in caplog.records if "records and rows run in" in r.message]
    # 10 board, 8 board-detail, 1 DLQ, 4 member records; 8 rows
    assert chosen == (
        f"the checks over 31 records and rows run in {engine} (in process up to {limit:,}: "
        "BOARDSTREAM_RECONCILE_IN_PROCESS_MAX_RECORDS)"
    )
    assert result.passed, "\n".join(result.summary())
    counts = result.reconciliation.counts
    assert {k: counts[k] for k in BALANCE} == {
        "source": 10,
        "read": 10,
        "not_yet_read": 0,
        "joined": 8,
        "unmatched": 0,
        "dead_lettered": 1,
        "pending": 1,
        "missing": 0,
        "expired_unseen": 0,
        "conflicting": 0,
    }
    assert sum(c["source"] for c in result.reconciliation.balance.values()) == 10
    assert failures(result) == {}
    assert result.reconciliation.findings["pending"].examples == ["waits"]
    # Its age and when the unmatched timeout sends it on, in the summary a person reads.
    [waiting] = result.reconciliation.waiting
    assert re.fullmatch(r"waits: waiting \w+, times out in \w+", waiting), waiting
    assert f"    {waiting}" in result.summary()
    assert result.reconciliation.findings["not_yet_read"].count == 0
    assert result.validation.success
    stored = RUNS.run(sa.create_engine(pipeline.settings.database), result.run_id)
    assert stored["passed"] is True
    assert stored["status"] == "PASSED"
    assert sum(c["joined"] for c in stored["balance"].values()) == 8
    assert stored["counts"]["joined"] == 8
    assert stored["snapshot"]["join"]["batch_id"] == 0
    assert result.reconciliation.expected_table_rows == 8  # the table was compared


def test_table_faults_are_named_exactly(pipeline: Pipeline, database_url: str) -> None:
    execute(
        database_url,
        "DELETE FROM board_detail WHERE board_id IN ('b1', 'b2')",
        "UPDATE board_detail SET city = 'Busan' WHERE board_id = 'b3'",
        "ALTER TABLE board_detail DROP CONSTRAINT board_detail_pkey",  # let a duplicate in
        "INSERT INTO board_detail SELECT * FROM board_detail WHERE board_id = 'b4'",
        "INSERT INTO board_detail (board_id, member_id, detail_partition, detail_offset)"
        " VALUES ('foreign', 1, 0, 0)",
    )
    result = reconcile(pipeline)
    assert not result.passed
    assert failures(result) == {
        "missing_in_table": ["b1", "b2"],
        "mismatched": ["b3"],
        "duplicates": ["b4"],
        "extra_in_table": ["foreign"],
    }
    failed = {(o.expectation, o.target) for o in result.validation.outcomes if not o.success}
    assert ("expect_column_values_to_be_unique(board_id)", "board_detail") in failed
    summary = "\n".join(result.summary())
    assert "FAILED" in summary and "missing_in_table: b1, b2" in summary

    # Put back the constraint the test bypassed (the upsert relies on it), then repair.
    execute(
        database_url,
        "DELETE FROM board_detail WHERE board_id = 'b4'",
        "ALTER TABLE board_detail ADD PRIMARY KEY (board_id)",
    )
    repaired = repair(
        pipeline.spark, pipeline.settings, result.run_id, join_checkpoint=join_checkpoint(pipeline)
    )
    assert repaired == {"rejoined": 0, "reloaded": 4, "deleted_extra": 1}
    after = reconcile(pipeline)
    assert after.passed, "\n".join(after.summary())


def test_topic_faults_and_in_flight_records(pipeline: Pipeline, t0: int) -> None:
    settings = pipeline.settings
    # A foreign record in board-detail, pointing at no source board.
    foreign = {"board_id": "ghost", "member_id": 1, "board_partition": 0, "board_offset": 10**9}
    producer = Producer(settings.to_confluent())
    producer.produce(settings.board_detail_topic, key=b"ghost", value=json.dumps(foreign))
    assert producer.flush(10) == 0
    # Two boards the join has not read yet: in flight, not missing.
    pipeline.board("late1", member_id=1, ts=t0 + 30)
    pipeline.board("late2", member_id=2, ts=t0 + 31)
    result = reconcile(pipeline)
    assert failures(result) == {"extra": ["ghost"]}
    assert result.reconciliation.findings["not_yet_read"].examples == ["late1", "late2"]
    assert result.reconciliation.findings["pending"].examples == ["waits"]


def test_a_board_detail_record_lost_from_the_topic_is_missing(pipeline: Pipeline, tmp_path) -> None:
    """As if a join run had skipped offsets: a copy of board-detail without b5, loaded by its
    own sink into its own table, reconciled against the same join progress."""
    settings = pipeline.settings
    copy = settings.model_copy(
        update={
            "board_detail_topic": f"{settings.board_detail_topic}-copy",
            "database_url": f"sqlite:///{tmp_path / 'copy.db'}",
        }
    )
    create_topics(admin_client(copy), copy, [TopicSpec(copy.board_detail_topic, 3, 1, {})])
    producer = Producer(copy.to_confluent())
    for key, value in consume_all(settings, settings.board_detail_topic):
        if key != b"b5":
            producer.produce(copy.board_detail_topic, key=key, value=value)
    assert producer.flush(10) == 0
    run_sink(pipeline.spark, copy, SinkJobConfig(checkpoint=tmp_path / "copy-sink"))
    result = reconcile(pipeline, copy, sink=tmp_path / "copy-sink")
    assert failures(result) == {"missing": ["b5"]}

    repaired = repair(
        pipeline.spark, copy, result.run_id, join_checkpoint=join_checkpoint(pipeline)
    )
    assert repaired == {"rejoined": 1, "reloaded": 1, "deleted_extra": 0}
    after = reconcile(pipeline, copy, sink=tmp_path / "copy-sink")
    assert after.passed, "\n".join(after.summary())

    def b5(of: Settings) -> list[dict]:
        return [json.loads(v) for k, v in consume_all(of, of.board_detail_topic) if k == b"b5"]

    assert b5(copy) == b5(settings)  # the same join code gives the same record


def errors(stderr: str) -> str:
    """The lines of a job's stderr that say what went wrong (not the JVM stack frames)."""
    return "\n".join(line for line in stderr.splitlines() if "Error" in line or "Exception" in line)


def test_reconcile_command_exit_code_is_the_verdict(pipeline: Pipeline, database_url: str) -> None:
    """`boardstream reconcile` runs the job under spark-submit; exit 0 passes, 1 fails. The
    first run is a full one (no ledger yet); the second, docs/COMMANDS.md's `reconcile
    --stall-after 30m --unmatched-timeout 10m`, an incremental one that finds the deleted row;
    the third, docs/COMMANDS.md's `reconcile --full`, finds it again."""
    settings = pipeline.settings
    env = {
        "BOARDSTREAM_DATABASE_URL": database_url,
        **{
            f"BOARDSTREAM_{name.upper()}": getattr(settings, name)
            for name in ("member_topic", "board_topic", "board_detail_topic")
        },
        "BOARDSTREAM_UNMATCHED_TOPIC": settings.unmatched_topic,
        "BOARDSTREAM_DLQ_TOPIC": settings.dlq_topic,
    }
    command = [
        "reconcile",
        f"--join-checkpoint={join_checkpoint(pipeline)}",
        f"--sink-checkpoint={pipeline.workdir / f'{settings.board_topic}-sink'}",
    ]
    passed = cli(settings, *command, timeout=600, extra_env=env)
    assert passed.returncode == 0, errors(passed.stdout + passed.stderr)
    assert "PASSED" in passed.stdout
    execute(database_url, "DELETE FROM board_detail WHERE board_id = 'b7'")
    liveness = ["--stall-after", "30m", "--unmatched-timeout", "10m"]
    failed = cli(settings, *command, *liveness, timeout=600, extra_env=env)
    assert failed.returncode == 1, failed.stdout[-2000:] + errors(failed.stderr)
    assert "missing_in_table: b7" in failed.stdout
    full = cli(settings, *command, "--full", timeout=600, extra_env=env)
    assert full.returncode == 1, full.stdout[-2000:] + errors(full.stderr)
    assert "missing_in_table: b7" in full.stdout
    kinds = [
        re.search(r"reconciliation run \d+ \((\w+)\)", r.stdout) for r in (passed, failed, full)
    ]
    assert [k and k.group(1) for k in kinds] == ["full", "incremental", "full"]
