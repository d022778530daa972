"""The edge worker's wiring: where it reaches its Airflow, the key it signs with, the DAGs and
connections its tasks see; refused without the shared key; started, it is ready once its pid
file says it registered, and a worker that exits first is an error with its log's end."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from boardstream.errors import BoardstreamError
from boardstream.settings import PROJECT_ROOT
from boardstream.stack.airflow import airflow_connections
from boardstream.stack.edge_worker import EdgeWorker
from tests.fixtures import isolated_settings

# Stands in for `airflow`: `edge worker --pid FILE ...` registers (writes its pid) and waits,
# or, given --queues fail, exits first.
FAKE_AIRFLOW = """#!{python}
import os, sys, time
args = sys.argv[1:]
assert args[:2] == ["edge", "worker"], args
if "fail" in args:
    print("registration refused")
    sys.exit(3)
pid_file = args[args.index("--pid") + 1]
open(pid_file, "w").write(str(os.getpid()))
time.sleep(300)
"""


def worker(tmp_path: Path, **settings: object) -> EdgeWorker:
    defaults = {"airflow_host": "10.0.0.2", "airflow_port": 8181, "airflow_jwt_secret": "k"}
    return EdgeWorker(isolated_settings(tmp_path, **{**defaults, **settings}))


def test_it_reaches_its_airflow_with_the_shared_key_and_the_same_dags(tmp_path: Path) -> None:
    made = worker(tmp_path, airflow_dags_folder=tmp_path / "dags")
    env = made.env()
    assert env["AIRFLOW__EDGE__API_URL"] == "http://10.0.0.2:8181/edge_worker/v1/rpcapi"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://10.0.0.2:8181/execution/"
    assert env["AIRFLOW__API_AUTH__JWT_SECRET"] == "k"
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(tmp_path / "dags")
    assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == str(PROJECT_ROOT / "plugins")
    assert env["AIRFLOW_HOME"] == str(tmp_path / "edge-worker")
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    for name, value in airflow_connections(made.settings).items():
        assert env[name] == value  # its tasks' connections are its host's settings
    assert made.listen_ports() == []


def test_its_name_and_queues_come_from_the_settings(tmp_path: Path) -> None:
    airflow = str(Path(sys.executable).parent / "airflow")
    pid = str(tmp_path / "edge-worker" / "worker.pid")
    named = worker(tmp_path, edge_worker_hostname="d1", edge_worker_queues="streams,default")
    assert named.command() == [
        airflow, "edge", "worker", "--pid", pid,
        "--edge-hostname", "d1", "--queues", "streams,default",
    ]  # fmt: skip
    assert named.address == "http://10.0.0.2:8181 as d1"
    assert worker(tmp_path).command() == [airflow, "edge", "worker", "--pid", pid]
    assert worker(tmp_path).address == "http://10.0.0.2:8181 as this machine's host name"


def test_without_the_shared_key_it_is_refused_before_starting(tmp_path: Path) -> None:
    made = worker(tmp_path, airflow_jwt_secret=None)
    with pytest.raises(BoardstreamError, match="an edge worker needs BOARDSTREAM_AIRFLOW_JWT"):
        made.start()
    assert made.process.pid() is None and not made.log_file.exists()


def fake(tmp_path: Path, made: EdgeWorker) -> EdgeWorker:
    # Named airflow, so that its command line holds the marker as the real one's does.
    executable = tmp_path / "bin" / "airflow"
    executable.parent.mkdir()
    executable.write_text(FAKE_AIRFLOW.format(python=sys.executable))
    executable.chmod(0o755)
    made.executable = executable
    return made


def test_it_is_ready_once_registered_and_stopped_whole(tmp_path: Path) -> None:
    made = fake(tmp_path, worker(tmp_path, edge_worker_hostname="d1"))
    pid = made.start(timeout_s=30)
    try:
        assert made.process.pid() == pid
        assert made.registered_file.read_text() == str(pid)
    finally:
        assert made.process.stop(timeout_s=10)
    assert made.process.pid() is None


def test_a_worker_that_exits_before_registering_is_an_error_with_its_log(tmp_path: Path) -> None:
    made = fake(tmp_path, worker(tmp_path, edge_worker_queues="fail"))
    with pytest.raises(BoardstreamError, match=r"exited \(code 3\)[^$]*registration refused"):
        made.start(timeout_s=30)
    assert made.process.pid() is None
