"""A local Airflow (``airflow standalone``: scheduler, DAG processor, triggerer, API server and UI
on an embedded SQLite database) wired to this project and to the local stack, and the edge
workers that run its tasks on other hosts.

Its home is ``var_dir/airflow``; its DAGs and plugins are this repo's; the connections the DAGs
use (``kafka_default``, ``spark_default``) come from the settings as ``AIRFLOW_CONN_*`` env vars,
never from files in the repo. The one user's password is generated on first start and kept in
the home's passwords file.

Settings make it one host's part of a cluster: its metadata database (PostgreSQL), the address
its API server binds and advertises, and an executor. Standalone replaces any executor but a
local one with LocalExecutor, so with another (the Edge executor) the same components run one
by one (``airflow_components.py``). An edge worker (``airflow edge worker``, the edge3
provider) on another host pulls that Airflow's tasks over HTTP and runs them there; it and the
API server sign and check their tokens with one shared secret (``airflow_jwt_secret``).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from boardstream.errors import BoardstreamError
from boardstream.logs import progress_logger
from boardstream.settings import PROJECT_ROOT, Settings
from boardstream.stack.ports import ListenPort, env_var
from boardstream.stack.processes import LocalService, log_tail

progress_log = progress_logger("airflow")

# The edge3 provider's executor, as Airflow's [core] executor names it.
EDGE_EXECUTOR = "airflow.providers.edge3.executors.EdgeExecutor"
# Runs the components without standalone (stack/airflow_components.py).
COMPONENTS_MODULE = "boardstream.entrypoints.airflow_components"


def uses_edge_executor(settings: Settings) -> bool:
    """Whether the settings' executor (one, or a list with aliases) includes the Edge executor."""
    named = (settings.airflow_executor or "").split(",")
    return any(entry.strip().rpartition(":")[2] == EDGE_EXECUTOR for entry in named)


def runs_standalone(settings: Settings) -> bool:
    """Standalone keeps a local executor and replaces any other (see the module's docstring)."""
    return settings.airflow_executor in (None, "LocalExecutor")


def airflow_executable() -> Path:
    """The venv's ``airflow``, next to this interpreter."""
    return Path(sys.executable).parent / "airflow"


def project_env(settings: Settings, home: Path) -> dict[str, str]:
    """What every Airflow process of this project is given, its API server's and an edge
    worker's alike: the venv first on the PATH, its home, this repo's DAGs (or the settings')
    and plugins, the connections, and the cluster's shared secret when there is one."""
    env = {
        # standalone starts its components as `airflow ...` from the PATH
        "PATH": f"{airflow_executable().parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(settings.airflow_dags_folder),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(PROJECT_ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        **airflow_connections(settings),
    }
    if settings.airflow_jwt_secret:
        env["AIRFLOW__API_AUTH__JWT_SECRET"] = settings.airflow_jwt_secret.get_secret_value()
    return env


def require_jwt_secret(settings: Settings, who: str) -> None:
    """Edge workers and the API server must share a key: without the setting each Airflow home
    would generate its own, and every worker's request would be refused (403)."""
    if not settings.airflow_jwt_secret:
        raise BoardstreamError(
            f"{who} needs BOARDSTREAM_AIRFLOW_JWT_SECRET, the key the API server and its edge "
            "workers share (any long random string, the same on every host)"
        )


def airflow_connections(settings: Settings) -> dict[str, str]:
    """The Airflow connections the DAGs use, as env vars, pointing where ``settings`` point."""
    # The extra is the confluent client config (the Kafka provider's hooks read it as such),
    # SASL credentials included: Airflow masks "password" keys in logs and the UI.
    kafka = {"conn_type": "kafka", "extra": settings.to_confluent()}
    spark = {"conn_type": "spark", "host": settings.spark_master}
    return {
        "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps(kafka),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(spark),
    }


class AirflowStandalone(LocalService):
    """``airflow standalone``, or with an executor it would replace, the same components under
    ``airflow_components.py`` (its command line ``python -m`` :data:`COMPONENTS_MODULE`)."""

    name = "airflow"
    # standalone stops its components on Ctrl-C, and so does the components' runner
    stop_signal = signal.SIGINT

    def __init__(self, settings: Settings) -> None:
        executable = airflow_executable()
        if runs_standalone(settings):
            self.command = [str(executable), "standalone"]
        else:
            self.command = [sys.executable, "-m", COMPONENTS_MODULE]
        super().__init__(settings, marker=" ".join(self.command))
        self.executable = executable
        self.passwords_file = self.home / "passwords.json"

    @property
    def address(self) -> str:
        return self.settings.airflow_url

    @property
    def what(self) -> str:
        """How errors name the process: ``airflow standalone`` or the components' runner."""
        if runs_standalone(self.settings):
            return "airflow standalone"
        return f"airflow's components ({COMPONENTS_MODULE})"

    def listen_ports(self) -> list[ListenPort]:
        return [ListenPort(self.settings.airflow_port, "airflow's api", env_var("airflow_port"))]

    def env(self) -> dict[str, str]:
        """The settings left unset add nothing: Airflow's own defaults apply, as before they
        existed (SQLite in the home, LocalExecutor, the API server on every address)."""
        settings = self.settings
        env = {
            **project_env(settings, self.home),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{settings.airflow_user}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.passwords_file),
            "AIRFLOW__API__PORT": str(settings.airflow_port),
            "AIRFLOW__API__BASE_URL": self.address,
        }
        if settings.airflow_host:
            env["AIRFLOW__API__HOST"] = settings.airflow_host
        if settings.airflow_executor:
            env["AIRFLOW__CORE__EXECUTOR"] = settings.airflow_executor
        if uses_edge_executor(settings):
            # The API server serves the edge workers' API (/edge_worker/v1/...) only when told.
            env["AIRFLOW__EDGE__API_ENABLED"] = "True"
        if settings.airflow_database_url:
            url = settings.airflow_database_url.get_secret_value()
            env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = url
        return env

    def password(self) -> str:
        """The user's password, generated (and kept) on first use."""
        if not self.passwords_file.exists():
            self.home.mkdir(parents=True, exist_ok=True)
            generated = {self.settings.airflow_user: secrets.token_urlsafe(12)}
            self.passwords_file.write_text(json.dumps(generated))
            self.passwords_file.chmod(0o600)
        passwords = json.loads(self.passwords_file.read_text())
        if self.settings.airflow_user not in passwords:
            raise BoardstreamError(
                f"{self.passwords_file} has no password for {self.settings.airflow_user!r}"
            )
        return passwords[self.settings.airflow_user]

    def start(self) -> int:
        if not self.executable.exists():
            raise BoardstreamError(f"{self.executable} not found; run bin/setup first")
        if uses_edge_executor(self.settings):
            require_jwt_secret(self.settings, "the Edge executor")
        self.password()
        process = self.process.start(self.command, self.log_file, self.env())
        self._wait_until_ready(process, self.log_file)
        return process.pid

    def _wait_until_ready(
        self, process: subprocess.Popen[bytes], log: Path, timeout_s: float = 300.0
    ) -> None:
        """The first start migrates the database: about a minute on this kind of machine."""
        deadline = time.monotonic() + timeout_s
        started = time.monotonic()
        while not self._healthy():
            if process.poll() is not None:
                raise BoardstreamError(
                    f"{self.what} exited (code {process.returncode}); last lines of {log}:\n"
                    + log_tail(log)
                )
            if time.monotonic() > deadline:
                raise BoardstreamError(f"airflow not ready after {timeout_s:.0f} s; see {log}")
            time.sleep(2)
            elapsed = time.monotonic() - started
            if round(elapsed) % 20 < 2:
                progress_log.info("airflow: starting (%.0f s)", elapsed)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.address}/api/v2/monitor/health", timeout=5):
                return True
        except (urllib.error.URLError, OSError):
            return False
