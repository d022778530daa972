"""The local Spark standalone cluster as `stack up --spark-cluster` runs it: a real master and
worker on free ports in a var dir of their own, a real job sent there by
BOARDSTREAM_SPARK_MASTER through `boardstream job run` (spark-submit, client mode), and `stack
down` stopping the worker, then the master, and nothing else.

The job is the join on its Python engine, so its state runs in Python workers on the cluster's
executor: the venv's interpreter (``spark.pyspark.python``) with boardstream importable there, and
the Kafka connector shipped by ``--jars``.
"""

from __future__ import annotations

import logging
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from boardstream import supervision
from boardstream.errors import BoardstreamError
from boardstream.joins.job import QUERY_NAME as JOIN
from boardstream.settings import Settings
from boardstream.stack.spark_cluster import SparkMaster, SparkWorker, master_state
from boardstream.supervision import register
from boardstream.supervision.supervisor import StreamStartError
from tests.fixtures import cli, isolated_settings
from tests.pipeline import Pipeline

pytestmark = pytest.mark.integration

BOARD = "c" * 24


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _status(settings: Settings) -> list[list[str]]:
    result = cli(settings, "stack", "status")
    assert (result.returncode, result.stderr) == (0, "")
    return [line.split() for line in result.stdout.splitlines()]


def _completed_apps(settings: Settings) -> list[dict]:
    """The master's finished applications; an app shows there once its driver has stopped."""
    deadline = time.monotonic() + 30
    while True:
        state = master_state(settings)
        assert state is not None, "the master stopped answering"
        if state["completedapps"] or time.monotonic() > deadline:
            return state["completedapps"]
        time.sleep(0.5)


def test_a_job_runs_on_the_local_cluster_and_down_stops_it(
    kafka: Settings, tmp_path, t0: int
) -> None:
    settings = isolated_settings(tmp_path / "var", bootstrap_servers=kafka.bootstrap_servers)
    master, worker = SparkMaster(settings), SparkWorker(settings)
    try:
        pids = {"spark-master": master.start(), "spark-worker": worker.start()}
        rows = _status(settings)
        assert rows[4:6] == [
            ["spark-master", "running", "(pid", f"{pids['spark-master']})", master.address],
            ["spark-worker", "running", "(pid", f"{pids['spark-worker']})", worker.address],
        ]
        assert master.address == f"spark://127.0.0.1:{settings.spark_master_port}"

        pipeline = Pipeline(kafka, None, tmp_path, partitions=1)
        pipeline.member(1, "first", t0)
        pipeline.board(BOARD, 1, t0 + 1)
        names = ("member_topic", "board_topic", "board_detail_topic", "unmatched_topic")
        topics = {f"BOARDSTREAM_{n.upper()}": getattr(pipeline.settings, n) for n in names}
        topics["BOARDSTREAM_DLQ_TOPIC"] = pipeline.settings.dlq_topic
        job = cli(
            settings,
            "job", "run", "board-detail-join", "--",
            "--engine", "python", "--checkpoint", str(tmp_path / "join-checkpoint"),
            extra_env={
                **topics,
                "BOARDSTREAM_PARTITIONS": "1",
                "BOARDSTREAM_SPARK_MASTER": master.address,
            },
            timeout=600,
        )  # fmt: skip
        assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
        assert pipeline.detail() == {
            BOARD: {
                "board_id": BOARD,
                "member_id": 1,
                "nickname": "first",
                "city": "Seoul",
                "phone": "010-0000-0000",
                "title": f"title {BOARD}",
                "body": "body",
                "created_ts": t0 + 1,
                "created_at": "2025-01-02T00:00:00",
                "modified_at": "2025-01-02T00:00:00",
                "member_modified_at": "2025-01-01T00:00:00",
                "board_partition": 0,
                "board_offset": 0,
                "board_timestamp_ms": t0 + 1,
                "member_partition": 0,
                "member_offset": 0,
            }
        }
        assert pipeline.unmatched() == {} and pipeline.dead_letters() == []

        # It ran on the cluster: the master finished one application, the job, whose executor
        # was this worker's (its work dir is named after the application).
        apps = _completed_apps(settings)
        assert [(app["name"], app["state"]) for app in apps] == [("board-detail-join", "FINISHED")]
        assert [path.name for path in worker.work_dir.iterdir()] == [apps[0]["id"]]

        down = cli(settings, "stack", "down")
        assert (down.returncode, down.stdout) == (0, "spark-worker stopped\nspark-master stopped\n")
        for pid in pids.values():
            assert not _running(pid), f"pid {pid} still running after down"
        assert not master.process.pid_file.exists() and not worker.process.pid_file.exists()
        assert [row[:2] for row in _status(settings)[4:6]] == [
            ["spark-master", "stopped"],
            ["spark-worker", "stopped"],
        ]
    finally:
        worker.process.stop()
        master.process.stop()


def test_down_stops_only_the_cluster_it_started(tmp_path) -> None:
    """A stack whose pid files name another stack's master and an unrelated process stops
    neither (the marker is the master's own properties file), and drops those pid files."""
    ours = isolated_settings(tmp_path / "ours")
    other = isolated_settings(tmp_path / "other")
    master = SparkMaster(ours)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        pid = master.start()
        run = other.var_dir / "run"
        run.mkdir(parents=True)
        (run / "spark-master.pid").write_text(str(pid))
        (run / "spark-worker.pid").write_text(str(bystander.pid))

        down = cli(other, "stack", "down")
        assert (down.returncode, down.stdout) == (0, "nothing was running\n")
        assert _running(pid) and master.process.pid() == pid
        assert bystander.poll() is None
        assert sorted(run.iterdir()) == []

        down = cli(ours, "stack", "down")
        assert (down.returncode, down.stdout) == (0, "spark-master stopped\n")
        assert not _running(pid) and not master.process.pid_file.exists()
        assert bystander.poll() is None
    finally:
        master.process.stop()
        bystander.kill()
        bystander.wait()


def test_a_master_that_cannot_start_says_why_and_where_its_log_is(tmp_path) -> None:
    """A busy port ends the start at once, naming the port (Spark would otherwise take the next
    one, and the settings would name the wrong master)."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        master = SparkMaster(isolated_settings(tmp_path, spark_master_port=port))
        with pytest.raises(BoardstreamError) as failed:
            master.start()
    first, *_, last = str(failed.value).splitlines()
    assert first == (
        f"the Spark master exited (code 1) while starting; last lines of {master.log_file}:"
    )
    assert last.startswith("java.net.BindException: ")
    assert f"Service 'sparkMaster' failed after 0 retries (starting from {port})!" in last
    assert master.process.pid() is None


def test_a_stream_the_cluster_has_too_few_cores_for_is_refused_before_it_starts(
    tmp_path, caplog
) -> None:
    """A worker of 1 core and a join that takes 2: the worker's start says so, and supervision
    refuses the join, naming both, rather than start a driver that would wait with no executor
    and load nothing while it looks alive (#48)."""
    settings = isolated_settings(tmp_path / "var", spark_worker_cores=1)
    master, worker = SparkMaster(settings), SparkWorker(settings)
    try:
        master.start()
        with caplog.at_level(logging.WARNING, "boardstream.stack.spark_cluster"):
            worker.start()
        assert [r.getMessage() for r in caplog.records] == [worker.short_of_streams()]
        on_cluster = settings.model_copy(update={"spark_master": master.address})
        with pytest.raises(StreamStartError) as refused:
            supervision.start(on_cluster)
        assert str(refused.value) == (
            f"board-detail-join takes 2 cores (BOARDSTREAM_STREAM_JOIN_CORES) and the Spark "
            f"cluster at {master.address} has 1 free of 1 (1 live worker): it would wait with "
            "none and load nothing. Give the cluster more (the local stack's worker: "
            "BOARDSTREAM_SPARK_WORKER_CORES, then stack down and up --spark-cluster) or the "
            "stream fewer (BOARDSTREAM_STREAM_JOIN_CORES)"
        )
        assert not register.log_file(on_cluster, JOIN).exists()  # no driver was started
        assert master_state(settings)["activeapps"] == []
    finally:
        worker.process.stop()
        master.process.stop()


# A driver that registers its application, then waits.
WAITING_DRIVER = """
import sys, time
from pyspark.sql import SparkSession
spark = SparkSession.builder.master(sys.argv[1]).config("spark.cores.max", "1").getOrCreate()
print(spark.sparkContext.applicationId, flush=True)
time.sleep(600)
"""


def test_an_application_whose_executors_keep_failing_waits_for_them(tmp_path) -> None:
    """A worker shutting down fails every executor launched on it; after 10 in a row Spark's
    master removes the application and its driver ends (the live join, when its worker was
    restarted, #48). The local master keeps it waiting, as a stream must: 12 failed launches
    here (the worker's work dir made a file, so that no executor directory can be made), and
    the application is still there."""
    settings = isolated_settings(tmp_path / "var")
    master, worker = SparkMaster(settings), SparkWorker(settings)
    driver = None
    try:
        master.start()
        worker.start()
        shutil.rmtree(worker.work_dir)
        worker.work_dir.write_text("not a directory")
        driver = subprocess.Popen(
            [sys.executable, "-c", WAITING_DRIVER, master.address],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        app = driver.stdout.readline().strip()
        failed = re.compile(rf"Removing executor {app}/\d+ because it is FAILED")
        deadline = time.monotonic() + 120
        while len(failed.findall(master.log_file.read_text())) < 12:
            active = [a["id"] for a in master_state(settings)["activeapps"]]
            assert active == [app], f"the master removed {app}: {master.log_file}"
            assert time.monotonic() < deadline, master.log_file.read_text()[-3000:]
            time.sleep(0.5)
        assert [a["id"] for a in master_state(settings)["activeapps"]] == [app]
        assert driver.poll() is None
    finally:
        if driver is not None:
            driver.kill()
            driver.wait()
        worker.process.stop()
        master.process.stop()
