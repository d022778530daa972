"""A live stream stopped while its batch waits for executors that never come.

Issue #48: the first stop of a sink whose batch was starved wrote ``ERROR py4j.clientserver``, a
Python traceback, ``[SPARK_JOB_CANCELLED]`` and a ``java.lang.StackOverflowError`` into its driver
log. Here the sink runs on a real standalone cluster, its worker is killed, the next batch is
planned and its job waits with no executor; then the stop: the driver must end within the
stop's timeout with nothing at ERROR, no traceback and no overflow in its log after the stop,
and the cancelled batch must be loaded by the next start.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path

import pytest

from boardstream import database
from boardstream.locations import shown
from boardstream.sink import table as sink_table
from boardstream.sink.job import QUERY_NAME as SINK
from boardstream.spark.checkpoint_lease import holder
from boardstream.stack.processes import session_members
from boardstream.stack.spark_cluster import SparkMaster, SparkWorker
from boardstream.supervision import register, supervisor
from boardstream.supervision.streams import StreamOptions, board_detail_streams
from tests.fixtures import free_port, new_database
from tests.pipeline import Pipeline, query

pytestmark = pytest.mark.integration

STOP_REQUESTED = "stop requested: stopping board-detail-sink"
STARVED_S = 10.0
# What a clean stop never writes: a log line at ERROR, a Python traceback, the JVM's overflow.
UNCLEAN = re.compile(r"\bERROR\b|Traceback|StackOverflowError")


def _wait_for(what: str, ready, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def _planned(checkpoint: str) -> int:
    """The newest batch in the offset log (of a local checkpoint, at its URI): Spark logs a
    batch there before running it."""
    offsets = Path(shown(checkpoint)) / "offsets"
    return max((int(p.name) for p in offsets.glob("[0-9]*")), default=-1)


def _boards(database_url: str) -> list[str]:
    return [row[0] for row in query(database_url, "SELECT board_id FROM board_detail ORDER BY 1")]


def test_a_stream_stopped_while_its_batch_is_starved_stops_cleanly(
    kafka, spark, postgres, tmp_path: Path, t0: int, request
) -> None:
    url = new_database(postgres, request)
    sink_table.create(database.engine(url))  # as the sink's start does, for the polls below
    pipeline = Pipeline(kafka, spark, tmp_path, partitions=1, database_url=url)
    pipeline.member(1, "m1", t0)
    pipeline.board("a" * 24, 1, t0 + 1)
    pipeline.join()
    ports = ("spark_master_port", "spark_master_ui_port", "spark_worker_ui_port")
    settings = pipeline.settings.model_copy(
        update={"var_dir": tmp_path / "var", **{port: free_port() for port in ports}}
    )
    master, worker = SparkMaster(settings), SparkWorker(settings)
    on_cluster = settings.model_copy(update={"spark_master": master.address})
    sink = board_detail_streams(on_cluster, StreamOptions())[1]
    assert sink.job == SINK
    log = register.log_file(on_cluster, SINK)
    try:
        master.start()
        worker_pid = worker.start()
        supervisor.ensure_running(on_cluster, sink)
        _wait_for("the first batch's row", lambda: _boards(url) == ["a" * 24])
        first = _planned(sink.checkpoint)

        # The worker and its executor killed at once: stopped gently, the worker was told by
        # the master to launch a new executor while it shut down, and at times did.
        os.killpg(worker_pid, signal.SIGKILL)
        _wait_for("the worker's processes gone", lambda: not session_members(worker_pid))
        pipeline.board("b" * 24, 1, t0 + 2)
        pipeline.join()
        _wait_for("the next batch planned", lambda: _planned(sink.checkpoint) > first)
        time.sleep(STARVED_S)  # its job submitted, and waiting for an executor

        stopped = supervisor.stop(on_cluster, sink)
        assert not stopped.running and _boards(url) == ["a" * 24]
        written = log.read_text(errors="replace").splitlines()
        asked = next(i for i, line in enumerate(written) if STOP_REQUESTED in line)
        # Spark logs the lost executor at ERROR when the worker goes: the fault, not the stop.
        assert [line for line in written[:asked] if UNCLEAN.search(line)] == [
            line for line in written[:asked] if "ERROR TaskSchedulerImpl: Lost executor" in line
        ]
        assert [line for line in written[asked:] if UNCLEAN.search(line)] == []

        # Nothing was lost: the next start replays the cancelled batch from the checkpoint.
        worker.start()
        supervisor.request(on_cluster, sink, register.RUNNING)
        supervisor.ensure_running(on_cluster, sink)
        _wait_for("the replayed batch's row", lambda: _boards(url) == ["a" * 24, "b" * 24])
        supervisor.stop(on_cluster, sink)
    finally:
        owner = holder(settings, sink.checkpoint)
        if owner is not None:  # this test's own driver, left by a failure
            with contextlib.suppress(ProcessLookupError):
                os.kill(owner.pid, signal.SIGKILL)
        worker.process.stop()
        master.process.stop()
