"""Factories for real local services on free ports, shared by the integration tests."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol, TypeVar

from boardstream.settings import PROJECT_ROOT, Settings
from boardstream.sink import table
from boardstream.stack.hosts import DEFAULT_NETWORK, Hosts, Network

# The local HDFS's ports (stack up --hdfs), each a setting.
HDFS_PORTS = (
    "hdfs_namenode_port",
    "hdfs_namenode_http_port",
    "hdfs_datanode_port",
    "hdfs_datanode_http_port",
    "hdfs_datanode_ipc_port",
)

# The live row ``bench/stream_latency.py --attach`` prints: boards sent, not loaded, quantiles.
LATENCY_ROW = re.compile(
    r"^\| live stream \(as Airflow started it\) \| (?P<sent>[\d,]+) \| (?P<missing>[\d,]+) \| "
    r"(?P<p50>[\d,]+) / (?P<p95>[\d,]+) / (?P<p99>[\d,]+) \|$",
    re.M,
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def fresh_clone(parent: Path, *more_ports: str) -> tuple[Path, dict[str, str]]:
    """A clone of the committed HEAD under ``parent``, and the environment a user's shell would
    run its commands with: no test session's Airflow or boardstream settings, the jar cache
    warm, and the stack's ports (and the settings ``more_ports`` names) free ones, so that
    another stack on this machine is left alone."""
    root = parent / "boardstream"
    subprocess.run(["git", "clone", "--quiet", str(PROJECT_ROOT), str(root)], check=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AIRFLOW", "BOARDSTREAM_", "VIRTUAL_ENV", "PYTEST", "SPARK"))
    }
    ports = (
        "BOARDSTREAM_CONTROLLER_PORT",
        "BOARDSTREAM_AIRFLOW_PORT",
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT",
        "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT",
        *more_ports,
    )
    env |= {
        "BOARDSTREAM_JAR_CACHE": str(PROJECT_ROOT / "var" / "jars"),
        "BOARDSTREAM_BOOTSTRAP_SERVERS": f"localhost:{free_port()}",
        **{name: str(free_port()) for name in ports},
    }
    return root, env


def free_port_run(count: int) -> int:
    """The first of ``count`` consecutive free ports: a local cluster's nodes take the ports
    after the settings' (stack/kafka_layout.py)."""
    while True:
        first = free_port()
        with contextlib.ExitStack() as held:
            try:
                for port in range(first, first + count):
                    sock = held.enter_context(socket.socket())
                    sock.bind(("localhost", port))
            except OSError:
                continue
        return first


def cluster_settings(var_dir: Path, **overrides: object) -> Settings:
    """Settings for a throwaway 3-broker cluster (``stack up --brokers 3``): six free ports in
    a row, every node a bootstrap server."""
    first = free_port_run(6)
    servers = ",".join(f"localhost:{first + 2 * n}" for n in range(3))
    return isolated_settings(
        var_dir,
        **{"brokers": 3, "bootstrap_servers": servers, "controller_port": first + 1, **overrides},
    )


def world_readable_dir(prefix: str) -> Path:
    """A temp dir PostgreSQL's system user can enter (pytest's own tmp dirs are root-only)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(path, 0o755)
    return path


class UpAndDown(Protocol):
    def up(self) -> None: ...
    def down(self) -> None: ...


Brought = TypeVar("Brought", bound=UpAndDown)


@contextlib.contextmanager
def up_in_own_dir(prefix: str, make: Callable[[Path], Brought]) -> Iterator[Brought]:
    """``make(root)`` up, ``root`` a temp dir named ``prefix…`` that PostgreSQL's system user
    can enter (its files); down and the dir removed afterwards, whatever happened."""
    root = world_readable_dir(prefix)
    made = make(root)
    try:
        made.up()
        yield made
    finally:
        made.down()
        shutil.rmtree(root, ignore_errors=True)


def hosts_up(
    names: list[str], prefix: str, network: Network = DEFAULT_NETWORK
) -> contextlib.AbstractContextManager[Hosts]:
    """Test hosts ``names`` on ``network``, up (see :func:`up_in_own_dir`)."""
    return up_in_own_dir(prefix, lambda root: Hosts(names, root, network))


def isolated_settings(var_dir: Path, **overrides: object) -> Settings:
    """Settings for a throwaway stack: its own var dir and ports, the project's jar cache."""
    values: dict[str, object] = {
        "var_dir": var_dir,
        "jar_cache": PROJECT_ROOT / "var" / "jars",
        "bootstrap_servers": f"localhost:{free_port()}",
        "controller_port": free_port(),
        "postgres_port": free_port(),
        "spark_master_port": free_port(),
        "spark_master_ui_port": free_port(),
        "spark_worker_ui_port": free_port(),
        **{field: free_port() for field in HDFS_PORTS},
        "connect_timeout_s": 10.0,
    }
    values.update(overrides)
    return Settings(**values)


def sqlite_or_postgres_url(request, tmp_path: Path) -> str:
    """The database URL of a test parametrized ``["sqlite", "postgresql"]``: a SQLite file of
    its own, or a database of its own on the session's PostgreSQL (the ``postgres`` fixture)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'test.db'}"
    return new_database(request.getfixturevalue("postgres"), request)


def new_database(postgres: Settings, request) -> str:
    """A PostgreSQL database of its own on the test server, so no other test's rows show up,
    dropped when ``request``'s test or fixture ends. The drop is forced: it closes the
    connections that the process's cached engines (``database.engine_with``) keep open, which
    one test after another would otherwise pile up past the server's ``max_connections``."""
    import uuid

    import sqlalchemy as sa

    server = postgres.database_url.rsplit("/", 1)[0]
    name = f"db_{uuid.uuid4().hex[:8]}"

    def run(statement: str) -> None:
        admin = sa.create_engine(f"{server}/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.execute(sa.text(statement))
        admin.dispose()

    run(f"CREATE DATABASE {name}")
    request.addfinalizer(lambda: run(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    return f"{server}/{name}"


def cli(
    settings, *args: str, timeout: float = 120, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run the `boardstream` command as a user would (the venv's console script), against the
    stack of ``settings``."""
    return subprocess.run(
        cli_command(*args),
        capture_output=True,
        text=True,
        env=cli_env(settings, extra_env),
        timeout=timeout,
        check=False,
    )


def cli_command(*args: str) -> list[str]:
    """The venv's `boardstream` console script with ``args``."""
    return [str(Path(sys.executable).parent / "boardstream"), *args]


def cli_env(settings, extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment that points the `boardstream` command at the stack of ``settings``."""
    return {
        **os.environ,
        "BOARDSTREAM_VAR_DIR": str(settings.var_dir),
        "BOARDSTREAM_JAR_CACHE": str(settings.jars_dir),
        "BOARDSTREAM_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "BOARDSTREAM_CONTROLLER_PORT": str(settings.controller_port),
        "BOARDSTREAM_BROKERS": str(settings.brokers),
        "BOARDSTREAM_POSTGRES_PORT": str(settings.postgres_port),
        "BOARDSTREAM_SPARK_MASTER_PORT": str(settings.spark_master_port),
        "BOARDSTREAM_SPARK_MASTER_UI_PORT": str(settings.spark_master_ui_port),
        "BOARDSTREAM_SPARK_WORKER_UI_PORT": str(settings.spark_worker_ui_port),
        "BOARDSTREAM_HDFS_HOST": settings.hdfs_host,
        **{f"BOARDSTREAM_{field.upper()}": str(getattr(settings, field)) for field in HDFS_PORTS},
        "BOARDSTREAM_CONNECT_TIMEOUT_S": str(settings.connect_timeout_s),
        **(extra_env or {}),
    }


class FakeClock:
    """A module's ``time`` replaced in a test: every reading is ``now``, set by the test."""

    def __init__(self, now: float) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        return self.now


@contextlib.contextmanager
def logged_lines(logger: logging.Logger, level: int) -> Iterator[list[tuple[str, int]]]:
    """(message, level) of each record ``logger`` emits at ``level`` and above meanwhile."""
    lines: list[tuple[str, int]] = []

    class Lines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append((record.getMessage(), record.levelno))

    handler, previous = Lines(logging.DEBUG), logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def detail_row(board_id: str, offset: int, member_id: int | None = 7) -> dict[str, object]:
    """A ``board_detail`` row of partition 0 at ``offset``, every other column null: what the
    sink's writer and the repair take, with only what a test asserts on set."""
    return dict.fromkeys(table.COLUMNS) | {
        "board_id": board_id,
        "member_id": member_id,
        "detail_partition": 0,
        "detail_offset": offset,
    }
