"""The live stream under Airflow on a real Spark standalone cluster (master and worker processes,
no local[*]): started by the request DAG while a second start races it, watched by the
continuous DAG's deferrable sensor, its driver killed with kill -9 and restarted by the next
run, the catch-up job refused on the checkpoint it owns, stopped gracefully on request; then
nothing lost, nothing duplicated, and reconciliation passes."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from boardstream import supervision
from boardstream.reconcile.run import reconcile_once
from boardstream.settings import Settings
from boardstream.spark.checkpoint_lease import holder
from boardstream.stack.spark_cluster import SparkMaster, SparkWorker, master_state
from boardstream.supervision import register, supervisor
from boardstream.supervision.register import RUNNING, STOPPED
from boardstream.supervision.streams import StreamOptions, board_detail_streams
from tests.airflow_fixtures import export_settings, run_dag
from tests.faults.harness import LEASE_TTL_S
from tests.fixtures import cli, isolated_settings
from tests.pipeline import Pipeline, query

JOIN, SINK = "board-detail-join", "board-detail-sink"
POLL_S = 5  # the watch's poll interval (the DAG's sensor default)


@pytest.fixture
def cluster(tmp_path) -> Iterator[Settings]:
    """A Spark master and a worker with room for both streams (join 2 cores, sink 1); the
    cluster's settings (its ports), with its master as every job's."""
    settings = isolated_settings(
        tmp_path / "cluster", spark_worker_cores=4, spark_worker_memory="3g"
    )
    master = SparkMaster(settings)
    master.start()
    SparkWorker(settings).start()
    yield settings.model_copy(update={"spark_master": master.address})
    SparkWorker(settings).process.stop()
    master.process.stop()


@pytest.fixture
def pipeline(kafka, spark, airflow_home, cluster, tmp_path, monkeypatch) -> Iterator[Pipeline]:
    master = cluster.spark_master
    pipeline = Pipeline(
        kafka,
        spark,
        tmp_path,
        var_dir=tmp_path / "var",
        spark_master=master,
        lease_ttl_s=LEASE_TTL_S,  # a killed driver's lease is free within it
    )
    export_settings(monkeypatch, pipeline.settings)
    yield pipeline
    for stream in board_detail_streams(pipeline.settings, StreamOptions()):  # never left behind
        if (owner := holder(pipeline.settings, stream.checkpoint)) is not None:
            os.kill(owner.pid, signal.SIGKILL)


def _until(done: Callable[[], bool], what: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def _loaded(settings: Settings, boards: list[str]) -> Callable[[], bool]:
    def done() -> bool:
        try:
            rows = query(settings.database, "SELECT board_id FROM board_detail")
        except Exception:  # the sink creates the table with its first batch
            return False
        return sorted(r[0] for r in rows) == sorted(boards)

    return done


def _in_background(action: Callable[[], object]) -> threading.Thread:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as error:
            errors.append(error)
            raise

    thread = threading.Thread(target=run, daemon=True)
    thread.errors = errors  # type: ignore[attr-defined]
    thread.start()
    return thread


def _apps(settings: Settings) -> dict[str, list[str]]:
    """The master's applications by name: the states of each one's runs, oldest first."""
    state = master_state(settings)
    assert state is not None
    apps: dict[str, list[str]] = {}
    for app in sorted(state["activeapps"] + state["completedapps"], key=lambda a: a["starttime"]):
        apps.setdefault(app["name"], []).append(app["state"])
    return apps


def test_the_supervised_stream_survives_its_drivers_death_and_stops_on_request(
    pipeline: Pipeline, cluster: Settings, spark, t0: int
) -> None:
    settings = pipeline.settings
    for member_id in (1, 2, 3):
        pipeline.member(member_id, f"m{member_id}", ts=t0)
    first = [f"s{i}" for i in range(10)]
    for i, board in enumerate(first):
        pipeline.board(board, member_id=i % 3 + 1, ts=t0 + 1 + i)

    # Two start requests at once, one through the request DAG: one stream each.
    racing = _in_background(lambda: supervision.start(settings))
    assert run_dag("board_detail_stream_request.py", "board_detail_stream_request") == "success"
    racing.join(timeout=300)
    assert racing.errors == []  # type: ignore[attr-defined]
    join, sink = board_detail_streams(settings, StreamOptions())
    first_join = holder(settings, join.checkpoint)
    assert first_join is not None and holder(settings, sink.checkpoint) is not None
    for job in (JOIN, SINK):
        assert len(register.read(settings, job).starts) == 1, f"{job} started twice"
    assert first_join.details["master"] == pipeline.settings.spark_master
    assert _apps(cluster) == {JOIN: ["RUNNING"], SINK: ["RUNNING"]}
    _until(_loaded(settings, first), "the first boards in board_detail")

    # The catch-up job is refused on a checkpoint the live stream owns, naming its driver.
    catch_up = cli(
        settings,
        "job", "run", JOIN, "--", "--trigger", "available-now",
        extra_env={"BOARDSTREAM_SPARK_MASTER": "local[1]"},
        timeout=300,
    )  # fmt: skip
    # (spark-submit passes its Python driver's stderr on to its stdout)
    assert catch_up.returncode == 2, catch_up.stdout[-3000:]
    assert f"in use by {JOIN} (pid {first_join.pid} on " in catch_up.stdout

    # The catch-up DAG, run explicitly, fails before any spark-submit, naming the stream.
    assert run_dag("board_detail_pipeline.py", "board_detail_pipeline") == "failed"

    # Reconciliation keeps running against the live stream.
    live = reconcile_once(spark, settings, "stream-test")
    assert live.passed, "\n".join(live.summary())
    assert live.reconciliation.counts["joined"] == len(first)

    # kill -9 the join's driver while the continuous DAG watches: its sensor fails.
    killed_at: list[float] = []

    def kill_join_driver() -> None:
        time.sleep(15)  # the run is in its watch by then (supervise finds both running)
        os.kill(first_join.pid, signal.SIGKILL)
        killed_at.append(time.monotonic())

    killer = _in_background(kill_join_driver)
    assert run_dag("board_detail_stream.py", "board_detail_stream") == "failed"
    noticed_s = time.monotonic() - killed_at[0]
    killer.join()
    assert noticed_s < LEASE_TTL_S + POLL_S + 10, f"the watch took {noticed_s:.1f}s to notice"
    assert (
        holder(settings, join.checkpoint) is None and holder(settings, sink.checkpoint) is not None
    )

    # Boards arrive while the join is dead; the next run restarts it, then a stop is requested.
    later = [f"s{i}" for i in range(10, 20)]
    for i, board in enumerate(later, start=len(first)):
        pipeline.board(board, member_id=i % 3 + 1, ts=t0 + 100 + i)

    def request_stop_once_loaded() -> None:
        _until(lambda: holder(settings, join.checkpoint) is not None, "the join's restart")
        _until(_loaded(settings, first + later), "the later boards in board_detail")
        for stream in (join, sink):
            supervisor.request(settings, stream, STOPPED)

    stopper = _in_background(request_stop_once_loaded)
    assert run_dag("board_detail_stream.py", "board_detail_stream") == "success"
    stopper.join(timeout=300)
    assert stopper.errors == []  # type: ignore[attr-defined]
    restarted = holder(settings, join.checkpoint)
    assert restarted is not None and restarted.pid != first_join.pid

    # Stopped on request through the request DAG: after the current batch, and they stay so.
    assert (
        run_dag("board_detail_stream_request.py", "board_detail_stream_request", action="stop")
        == "success"
    )
    assert holder(settings, join.checkpoint) is None and holder(settings, sink.checkpoint) is None
    records = {job: register.read(settings, job) for job in (JOIN, SINK)}
    assert {job: (r.desired, r.restarts, len(r.starts)) for job, r in records.items()} == {
        JOIN: (STOPPED, 1, 2),
        SINK: (STOPPED, 0, 1),
    }
    assert supervision.ensure(settings)[0].running is False  # a supervisor leaves them stopped
    assert RUNNING not in {register.read(settings, job).desired for job in (JOIN, SINK)}
    _until(
        lambda: all(
            s not in ("RUNNING", "WAITING") for runs in _apps(cluster).values() for s in runs
        ),
        "the applications to finish",
        timeout_s=60,
    )
    assert [len(runs) for runs in (_apps(cluster)[JOIN], _apps(cluster)[SINK])] == [2, 1]

    # Nothing lost, nothing duplicated, and the verdict agrees.
    rows = query(settings.database, "SELECT board_id, nickname FROM board_detail")
    assert sorted(rows) == sorted((b, f"m{i % 3 + 1}") for i, b in enumerate(first + later))
    result = reconcile_once(spark, settings, "stream-test")
    assert result.passed, "\n".join(result.summary())
    assert result.reconciliation.counts["joined"] == 20


@pytest.mark.long
def test_the_stream_waits_for_a_lost_worker_and_recovers_when_one_returns(
    pipeline: Pipeline, cluster: Settings, spark, t0: int
) -> None:
    """The worker machine lost (its daemon and executors killed at once): the drivers live on
    with no executor, and once a worker registers they carry on from where they were."""
    settings = pipeline.settings
    for member_id in (1, 2):
        pipeline.member(member_id, f"m{member_id}", ts=t0)
    before = [f"w{i}" for i in range(5)]
    for i, board in enumerate(before):
        pipeline.board(board, member_id=i % 2 + 1, ts=t0 + 1 + i)
    drivers = [s.holder for s in supervision.start(settings)]
    _until(_loaded(settings, before), "the boards before the loss")

    worker = SparkWorker(cluster)
    pid = worker.process.pid()
    assert pid is not None
    os.killpg(os.getpgid(pid), signal.SIGKILL)  # the daemon and the executors it launched
    after = [f"w{i}" for i in range(5, 10)]
    for i, board in enumerate(after, start=len(before)):
        pipeline.board(board, member_id=i % 2 + 1, ts=t0 + 1 + i)
    time.sleep(20)
    assert not _loaded(settings, before + after)(), "loaded with no executor?"
    assert [s.holder for s in supervision.ensure(settings)] == drivers  # no driver died

    worker.start()
    _until(_loaded(settings, before + after), "the boards after the worker returned")
    assert all(s.record.restarts == 0 for s in supervision.stop(settings))
    result = reconcile_once(spark, settings, "worker-test")
    assert result.passed, "\n".join(result.summary())
    assert result.reconciliation.counts["joined"] == 10
