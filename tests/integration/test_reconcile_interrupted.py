"""Never half-written: SQLite locked by another writer for longer than its busy timeout while a
run is under way (real broker, Spark and SQLite). The run cannot record its end: it says so in
one error and stays open; the next run closes it as ERRORED, interrupted, and says so, and the
"Pipeline health" page shows it."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from boardstream import database
from boardstream.entrypoints.health import pipeline_health
from boardstream.reconcile.evidence.run_ledger import FULL
from boardstream.reconcile.run import RecordingError, RunResult, reconcile_once
from boardstream.settings import Settings
from tests.pipeline import Pipeline
from tests.store import RUNS

HEARTBEAT_TIMEOUT_S = 4.0


@pytest.fixture
def pipeline(kafka, spark, tmp_path: Path, t0: int) -> Pipeline:
    # pysqlite's 5 s busy timeout, not the platform's 60 s: the run's writes give up sooner;
    # and a lease of 3 s, so that the run's, lost to the lock, is free soon after.
    database_url = f"sqlite:///{tmp_path / 'boardstream.db'}?timeout=5"
    pipeline = Pipeline(
        kafka, spark, tmp_path, var_dir=tmp_path, database_url=database_url, lease_ttl_s=3
    )
    for member_id in range(1, 4):
        pipeline.member(member_id, f"m{member_id}", ts=t0)
    for i in range(6):
        pipeline.board(f"b{i}", member_id=i % 3 + 1, ts=t0 + 1 + i)
    pipeline.join()
    pipeline.sink()
    return pipeline


def run(pipeline: Pipeline, settings: Settings) -> RunResult:
    return reconcile_once(
        pipeline.spark,
        settings,
        "test",
        join_checkpoint=pipeline.workdir / f"{settings.board_topic}-join",
        sink_checkpoint=pipeline.workdir / f"{settings.board_topic}-sink",
        kind=FULL,
    )


def open_run(path: Path) -> int | None:
    """The run under way, read as any reader may while a writer holds the database."""
    with sqlite3.connect(path) as reader:
        try:
            row = reader.execute(
                "SELECT run_id FROM board_detail_reconciliation_run WHERE status IS NULL"
            ).fetchone()
        except sqlite3.OperationalError:  # the ledger not created yet
            return None
    return row[0] if row else None


def test_sqlite_locked_past_its_busy_timeout_mid_run(pipeline: Pipeline, tmp_path: Path) -> None:
    settings = pipeline.settings.model_copy(
        update={"reconcile_heartbeat_timeout_s": HEARTBEAT_TIMEOUT_S}
    )
    path = tmp_path / "boardstream.db"
    raised: list[BaseException] = []

    def reconciling() -> None:
        try:
            run(pipeline, settings)
        except BaseException as error:  # the test asserts on it
            raised.append(error)

    worker = threading.Thread(target=reconciling)
    worker.start()
    deadline = time.monotonic() + 600
    while (first := open_run(path)) is None:
        assert worker.is_alive(), f"the run ended before it was seen under way: {raised}"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # Another writer takes the database and keeps it past the busy timeout (5 s) of every
    # write the run tries, until the run gives up.
    locker = sqlite3.connect(path, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    worker.join(600)
    locker.execute("ROLLBACK")
    locker.close()
    assert not worker.is_alive()
    (error,) = raised
    assert isinstance(error, RecordingError), repr(error)
    message = str(error)
    assert message.startswith(f"reconciliation run {first}: could not record ")
    assert "database is locked" in message
    assert message.endswith("the next run closes it as interrupted")
    assert "\n" not in message
    assert RUNS.run(database.engine(settings.database), first)["status"] is None  # left open

    time.sleep(HEARTBEAT_TIMEOUT_S * 1.5)  # its heartbeat stopped with it
    result = run(pipeline, settings)
    assert result.passed, "\n".join(result.summary())
    closed = f"  run {first} closed as ERRORED: interrupted: found open by run {result.run_id} at"
    assert any(line.startswith(closed) for line in result.summary()), result.summary()

    (shown,) = [r for r in pipeline_health(settings)["reconciliation_runs"] if r["run_id"] == first]
    assert shown["status"] == "ERRORED"
    assert shown["error"].startswith(f"interrupted: found open by run {result.run_id} at ")
    assert shown["finished_at"] is not None
