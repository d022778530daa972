"""A local Airflow (``airflow standalone``: scheduler, DAG processor, triggerer, API server and UI
on an embedded SQLite database) wired to this project and to the local stack.

Its home is ``var_dir/airflow``; its DAGs and plugins are this repo's; the connections the DAGs
use (``kafka_default``, ``spark_default``) come from the settings as ``AIRFLOW_CONN_*`` env vars,
never from files in the repo. The one user's password is generated on first start and kept in
the home's passwords file.
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
from boardstream.stack.processes import LocalService

progress_log = progress_logger("airflow")


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
    name = "airflow"
    stop_signal = signal.SIGINT  # standalone stops its components on Ctrl-C

    def __init__(self, settings: Settings) -> None:
        executable = Path(sys.executable).parent / "airflow"
        super().__init__(settings, marker=f"{executable} standalone")
        self.executable = executable
        self.passwords_file = self.home / "passwords.json"

    @property
    def address(self) -> str:
        return f"http://localhost:{self.settings.airflow_port}"

    def listen_ports(self) -> list[ListenPort]:
        return [ListenPort(self.settings.airflow_port, "airflow's api", env_var("airflow_port"))]

    def env(self) -> dict[str, str]:
        return {
            # standalone starts its components as `airflow ...` from the PATH
            "PATH": f"{self.executable.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT_ROOT / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(PROJECT_ROOT / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{self.settings.airflow_user}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.passwords_file),
            "AIRFLOW__API__PORT": str(self.settings.airflow_port),
            "AIRFLOW__API__BASE_URL": self.address,
            **airflow_connections(self.settings),
        }

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
        self.password()
        process = self.process.start(
            [str(self.executable), "standalone"], self.log_file, self.env()
        )
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
                    f"airflow standalone exited (code {process.returncode}); see {log}"
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
