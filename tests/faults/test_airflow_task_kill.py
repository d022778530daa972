"""An Airflow task killed mid-run (kill -9 of `airflow tasks test` and the spark-submit under
it) and run again ends as if it had run once: every board exactly once, reconciliation passes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.airflow_fixtures import export_settings
from tests.faults.harness import Scenario

# Minutes of Airflow scheduling around one kill; the kill itself is test_process_kills'.
pytestmark = pytest.mark.long

SEED = 20261126
AIRFLOW = str(Path(sys.executable).parent / "airflow")


def task(s: Scenario, task_id: str) -> subprocess.Popen:
    command = [AIRFLOW, "tasks", "test", "board_detail_pipeline", task_id, "2026-11-22"]
    return subprocess.Popen(
        command,
        stdout=s.log(f"airflow-{task_id}").open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # the task and the spark-submit it starts are one group
    )


def spark_jvm(process: subprocess.Popen) -> psutil.Process | None:
    """The task's spark-submit JVM, once it runs."""
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(process.pid).children(recursive=True):
            if "org.apache.spark.deploy.SparkSubmit" in " ".join(child.cmdline()):
                return child
    return None


def kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL the task and everything under it, as a lost worker would leave it."""
    tree = psutil.Process(process.pid).children(recursive=True)
    os.killpg(process.pid, signal.SIGKILL)
    for child in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    process.wait()


def test_airflow_task_killed_mid_run_and_rerun(
    services, airflow_home, tmp_path: Path, monkeypatch
) -> None:
    s = Scenario(
        "Airflow task killed mid-run and re-run",
        services.settings,
        services.database_url,
        tmp_path,
        SEED,
    )
    s.produce()
    export_settings(monkeypatch, s.settings)  # the tasks' connections and BOARDSTREAM_* settings

    running = task(s, "join")
    deadline = time.monotonic() + 300
    while spark_jvm(running) is None:
        assert running.poll() is None, s.tail("airflow-join")
        assert time.monotonic() < deadline, "the join task never started spark-submit"
        time.sleep(0.5)
    time.sleep(s.rng.uniform(4.0, 10.0))  # inside the job: the session up, its batch under way
    assert running.poll() is None, "the join task ended before the kill: nothing was tested"
    kill_tree(running)
    s.faults, s.restarts = 1, 1

    began = time.monotonic()
    for task_id in ("join", "sink"):
        assert task(s, task_id).wait(timeout=900) == 0, s.tail(f"airflow-{task_id}")
    s.assert_nothing_lost(time.monotonic() - began)
