"""A local PostgreSQL server from Debian's packages, with its cluster under ``var_dir/postgres``.

PostgreSQL refuses to run as root, so when we are root (CI, containers) its commands run as the
``postgres`` system user that Debian's package creates, and the data directory is theirs.

It is the local and test stack's database, without passwords: it listens on
``BOARDSTREAM_POSTGRES_HOST`` only (localhost by default) and trusts every client that reaches it
there, over its socket, the loopback (initdb's ``--auth=trust``) or from a subnet of its own
host (``samenet`` in ``pg_hba.conf``: a test host's database serves the others, see hosts.py).
Never give it an address on a network you do not trust.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import time
from pathlib import Path

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.stack.ports import ListenPort, env_var
from boardstream.stack.processes import LocalService

DATABASE = "boardstream"
USER = "boardstream"
# Clients of the server's own subnets, which reach it only when it listens on an address there.
SAME_SUBNET = "host all all samenet trust"


def _bin_dir() -> Path:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version_key)
    if candidates:
        return Path(candidates[-1]).parent
    initdb = shutil.which("initdb")
    if initdb is None:
        raise BoardstreamError(
            "PostgreSQL server binaries not found; bin/setup --postgres installs them "
            "(Debian package postgresql)"
        )
    return Path(initdb).resolve().parent


def _version_key(path: str) -> int:
    version = Path(path).parent.parent.name
    return int(version) if version.isdigit() else 0


class Postgres(LocalService):
    name = "postgres"
    stop_signal = signal.SIGINT  # "fast" shutdown: SIGTERM would wait for every client

    def __init__(self, settings: Settings) -> None:
        data_dir = settings.var_dir / self.name / "data"
        super().__init__(settings, marker=str(data_dir))
        self.data_dir = data_dir
        self.socket_dir = self.home / "run"

    @property
    def address(self) -> str:
        return f"{self.settings.postgres_host}:{self.settings.postgres_port}"

    def listen_ports(self) -> list[ListenPort]:
        port = self.settings.postgres_port
        return [ListenPort(port, "postgres's server", env_var("postgres_port"))]

    @property
    def url(self) -> str:
        return f"postgresql+psycopg2://{USER}@{self.address}/{DATABASE}"

    def _as_owner(self, command: list[str]) -> list[str]:
        if os.geteuid() != 0:
            return command
        return ["runuser", "-u", "postgres", "--", *command]

    def _run(self, command: list[str]) -> None:
        result = subprocess.run(
            self._as_owner(command), capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            raise BoardstreamError(f"{command[0]} failed:\n{result.stdout}{result.stderr}")

    def _init_cluster(self, bin_dir: Path) -> None:
        for directory in (self.home, self.socket_dir, self.log_file.parent):
            directory.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            for directory in (self.home, self.socket_dir):
                os.chown(directory, owner.pw_uid, owner.pw_gid)
            self.log_file.touch()
            os.chown(self.log_file, owner.pw_uid, owner.pw_gid)
        if not (self.data_dir / "PG_VERSION").exists():
            self._run(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(self.data_dir),
                    "-U",
                    USER,
                    "--auth=trust",
                    "-E",
                    "UTF8",
                ]
            )
        self._trust_same_subnet()

    def _trust_same_subnet(self) -> None:
        """Add :data:`SAME_SUBNET` to ``pg_hba.conf`` unless there, so that a cluster made before
        it (or on the loopback) serves other hosts once it listens on a host's address. The file
        is appended to, so it keeps its owner."""
        hba = self.data_dir / "pg_hba.conf"
        if hba.exists() and SAME_SUBNET in hba.read_text().splitlines():
            return
        with hba.open("a") as lines:
            lines.write(f"# boardstream: clients of this host's subnets\n{SAME_SUBNET}\n")

    def start(self, timeout_s: float = 60.0) -> int:
        bin_dir = _bin_dir()
        self._init_cluster(bin_dir)
        options = (
            f"-p {self.settings.postgres_port} -k {self.socket_dir} "
            f"-c listen_addresses={self.settings.postgres_host} -c fsync=off"
        )
        self._run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(self.data_dir),
                "-l",
                str(self.log_file),
                "-o",
                options,
                "-w",
                "-t",
                str(int(timeout_s)),
                "start",
            ]
        )
        pid = int((self.data_dir / "postmaster.pid").read_text().split()[0])
        self.process.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.process.pid_file.write_text(str(pid))
        self._create_database(bin_dir)
        return pid

    def _create_database(self, bin_dir: Path) -> None:
        psql = [
            str(bin_dir / "psql"),
            "-h",
            str(self.socket_dir),
            "-p",
            str(self.settings.postgres_port),
        ]
        query = f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'"
        deadline = time.monotonic() + 10
        while True:
            found = subprocess.run(
                self._as_owner([*psql, "-U", USER, "-d", "postgres", "-tAc", query]),
                capture_output=True,
                text=True,
                check=False,
            )
            if found.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        if found.stdout.strip() != "1":
            self._run([*psql, "-U", USER, "-d", "postgres", "-c", f"CREATE DATABASE {DATABASE}"])
