"""An Airflow edge worker (``airflow edge worker``, the edge3 provider): it runs, on its own
host, the tasks of an Airflow whose executor is the Edge executor (``stack/airflow.py``), pulled
from that Airflow's API server over HTTP. It needs no database and no port of its own.

Its home is ``var_dir/edge-worker`` (its task logs there too); it reads the same DAG files and
plugins as the Airflow it serves (``airflow_dags_folder``), reaches it at ``airflow_url``, and
signs its requests with the key that Airflow checks them with (``airflow_jwt_secret``). It
registers under ``edge_worker_hostname``, one name per worker: the hosts of one machine share
its host name, and a second worker under a name already registered is refused.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.stack.airflow import airflow_executable, project_env, require_jwt_secret
from boardstream.stack.ports import ListenPort
from boardstream.stack.processes import LocalService

# The worker sets its process title to "airflow edge worker: <hostname>" once registered; its
# command line holds these words before that too.
MARKER = "airflow edge worker"
# The edge API's path under an API server, and the Task SDK's (the tasks report there).
EDGE_API = "/edge_worker/v1/rpcapi"
EXECUTION_API = "/execution/"


class EdgeWorker(LocalService):
    name = "edge-worker"
    # SIGTERM: the worker stops its running tasks and quits (SIGINT waits for them, unbounded).
    stop_signal = signal.SIGTERM

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, marker=MARKER)
        self.executable = airflow_executable()
        # The worker's own pid file: written once the API server has registered it.
        self.registered_file = self.home / "worker.pid"

    @property
    def address(self) -> str:
        return f"{self.settings.airflow_url} as {self.hostname}"

    @property
    def hostname(self) -> str:
        return self.settings.edge_worker_hostname or "this machine's host name"

    def listen_ports(self) -> list[ListenPort]:
        return []

    def env(self) -> dict[str, str]:
        api = self.settings.airflow_url
        return {
            **project_env(self.settings, self.home),
            "AIRFLOW__EDGE__API_URL": f"{api}{EDGE_API}",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{api}{EXECUTION_API}",
        }

    def command(self) -> list[str]:
        command = [str(self.executable), "edge", "worker", "--pid", str(self.registered_file)]
        if self.settings.edge_worker_hostname:
            command += ["--edge-hostname", self.settings.edge_worker_hostname]
        if self.settings.edge_worker_queues:
            command += ["--queues", self.settings.edge_worker_queues]
        return command

    def start(self, timeout_s: float = 180.0) -> int:
        """Start the worker and return once the API server has registered it (the worker
        retries an unreachable one for minutes; refused, it exits and its log says why)."""
        if not self.executable.exists():
            raise BoardstreamError(f"{self.executable} not found; run bin/setup first")
        require_jwt_secret(self.settings, "an edge worker")
        self.home.mkdir(parents=True, exist_ok=True)
        self.registered_file.unlink(missing_ok=True)
        process = self.process.start(self.command(), self.log_file, self.env())
        self.await_ready(
            process,
            lambda: self._registered(process),
            f"the edge worker (registering with {self.settings.airflow_url})",
            timeout_s,
        )
        return process.pid

    def _registered(self, process: subprocess.Popen[bytes]) -> bool:
        return _read_pid(self.registered_file) == process.pid


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
