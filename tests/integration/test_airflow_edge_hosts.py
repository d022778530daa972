"""Airflow on a host of its own, its tasks run by edge workers on two driver hosts (needs root):
each host started by the `boardstream` command in its namespace, by settings alone
(PostgreSQL on the Airflow host's loopback for the metadata, the Edge executor, the API server
on the host's address, one shared token key). A run's task lands on a driver host, never the
Airflow host; every process of that host killed (-9), the next run completes on the other one;
`stack down` then stops what `up` started on each host, and leaves nothing running there.

The task records where it ran three ways: the host's SPARK_LOCAL_IP (hosts.py gives each
host's processes its own), the address its connection to the API server leaves from, and the
edge worker's name; and Airflow's own record of the task's host agrees."""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardstream.entrypoints.airflow_api import AirflowApi
from boardstream.stack.airflow import EDGE_EXECUTOR, AirflowStandalone
from boardstream.stack.hosts import Hosts, Network
from tests.fixtures import cli_command, world_readable_dir

pytestmark = pytest.mark.long

NETWORK = Network("bse", "10.232.3.0/24")
DRIVERS = ("d1", "d2")
PORT = 8080  # the Airflow host's own address: no other stack's port
POSTGRES_PORT = 5432  # on the Airflow host's own loopback
DAG_ID = "where_it_ran"
# How long the next run after a driver host's death is waited for. It took 6.1-8.2 s from the
# trigger in five runs (the scheduler's loop, the live worker's 5 s poll, the task's start; the
# run's state read every 2 s) on this 2-core machine: printed, not asserted (no wall-clock bound).
WAIT_S = 300.0
DAG = """
import json
import os
import socket
from pathlib import Path

import pendulum
from airflow.sdk import dag, get_current_context, task


@dag(
    dag_id="where_it_ran",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    is_paused_upon_creation=False,
)
def where_it_ran():
    @task(retries=0)
    def record():
        with socket.create_connection(({address!r}, {port}), timeout=10) as connection:
            source = connection.getsockname()[0]
        tag = get_current_context()["dag_run"].conf["tag"]
        where = {{
            "spark_local_ip": os.environ.get("SPARK_LOCAL_IP"),
            "source": source,
            "worker": os.environ.get("HOSTNAME"),
        }}
        Path({out!r}, tag + ".json").write_text(json.dumps(where))

    record()


where_it_ran()
"""


class Cluster:
    """The three hosts, each one's settings as environment, and the `boardstream` command in
    each."""

    def __init__(self, root: Path) -> None:
        self.hosts = Hosts(["airflow", *DRIVERS], root, NETWORK)
        self.dags, self.out = root / "dags", root / "ran"
        self.address = self.hosts.address("airflow")
        self.url = f"http://{self.address}:{PORT}"
        self.shared = {
            "BOARDSTREAM_AIRFLOW_HOST": self.address,
            "BOARDSTREAM_AIRFLOW_PORT": str(PORT),
            "BOARDSTREAM_AIRFLOW_EXECUTOR": EDGE_EXECUTOR,
            "BOARDSTREAM_AIRFLOW_JWT_SECRET": secrets.token_urlsafe(32),
            "BOARDSTREAM_AIRFLOW_DAGS_FOLDER": str(self.dags),
        }
        self.own = {
            "airflow": {
                "BOARDSTREAM_POSTGRES_PORT": str(POSTGRES_PORT),
                "BOARDSTREAM_AIRFLOW_DATABASE_URL": (
                    f"postgresql+psycopg2://boardstream@localhost:{POSTGRES_PORT}/boardstream"
                ),
            },
            **{name: {"BOARDSTREAM_EDGE_WORKER_HOSTNAME": name} for name in DRIVERS},
        }

    def env(self, name: str) -> dict[str, str]:
        """Host ``name``'s environment: no Airflow configuration of this test session's."""
        env = self.hosts.environment(name, {**self.shared, **self.own[name]})
        return {k: v for k, v in env.items() if not k.startswith("AIRFLOW")}

    def boardstream(self, name: str, *args: str, timeout_s: float = 600) -> str:
        command = self.hosts.command(name, cli_command(*args))
        result = subprocess.run(
            command, capture_output=True, text=True, env=self.env(name), timeout=timeout_s
        )
        assert result.returncode == 0, f"{name}: {args}\n{result.stdout}{result.stderr}"
        return result.stdout

    def api(self) -> AirflowApi:
        password = AirflowStandalone(self.hosts.settings("airflow")).password()
        return AirflowApi(self.url, "admin", password)

    def where(self, tag: str) -> dict[str, str]:
        return json.loads((self.out / f"{tag}.json").read_text())

    def host_at(self, address: str) -> str:
        return next(n for n in self.hosts.hosts if self.hosts.address(n) == address)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    root = world_readable_dir("bse-airflow-")
    made = Cluster(root)
    made.dags.mkdir()
    made.out.mkdir()
    (made.dags / "where_it_ran.py").write_text(
        DAG.format(address=made.address, port=PORT, out=str(made.out))
    )
    try:
        made.hosts.up()
        yield made
    finally:
        for name in made.hosts.hosts:
            subprocess.run(
                made.hosts.command(name, cli_command("stack", "down")),
                env=made.env(name),
                capture_output=True,
                timeout=120,
                check=False,
            )
        made.hosts.down()
        shutil.rmtree(root, ignore_errors=True)


def test_a_task_runs_on_a_driver_host_and_on_the_other_once_that_one_dies(cluster) -> None:
    started = time.monotonic()
    up = cluster.boardstream("airflow", "stack", "up", "--only", "postgres", "--only", "airflow")
    assert "airflow started (pid" in up and f"on {cluster.url}" in up, up
    for name in DRIVERS:
        up = cluster.boardstream(name, "stack", "up", "--only", "edge-worker")
        assert "edge-worker started (pid" in up and f"on {cluster.url} as {name}" in up, up
    print(f"cluster up in {time.monotonic() - started:.0f} s")
    api = cluster.api()
    api.wait_for_dag(DAG_ID)
    api.unpause(DAG_ID)

    first_run = api.trigger(DAG_ID, {"tag": "first"})
    assert api.wait(DAG_ID, first_run, timeout_s=300) == "success"
    first = cluster.host_at(cluster.where("first")["spark_local_ip"])
    assert first in DRIVERS, f"the task ran on {first}, not on a driver host"
    assert cluster.where("first") == _ran_on(cluster, first)
    assert _task_hosts(api, first_run) == [first]

    killed = cluster.hosts.kill(first)
    assert killed, f"nothing ran on {first}"
    other = next(name for name in DRIVERS if name != first)
    triggered = time.monotonic()
    second_run = api.trigger(DAG_ID, {"tag": "second"})
    assert api.wait(DAG_ID, second_run, timeout_s=WAIT_S) == "success"
    took = time.monotonic() - triggered
    print(f"first run on {first}; {first} killed; second run on {other} after {took:.1f} s")
    assert cluster.where("second") == _ran_on(cluster, other)
    assert _task_hosts(api, second_run) == [other]
    assert cluster.hosts.pids(first) == []

    # `stack down` on each host stops what `up` started there, and nothing is left running.
    status = cluster.boardstream(other, "stack", "status")
    assert "edge-worker  running (pid" in status, status
    assert cluster.boardstream(other, "stack", "down") == "edge-worker stopped\n"
    down = cluster.boardstream("airflow", "stack", "down")
    assert down == "airflow stopped\npostgres stopped\n", down
    for name in ("airflow", other):
        assert cluster.hosts.pids(name) == [], name


def _ran_on(cluster: Cluster, name: str) -> dict[str, str]:
    address = cluster.hosts.address(name)
    return {"spark_local_ip": address, "source": address, "worker": name}


def _task_hosts(api: AirflowApi, run_id: str) -> list[str]:
    """The host Airflow recorded for each task of the run (the edge worker's name)."""
    return [task["hostname"] for task in api.task_instances(DAG_ID, run_id)]
