"""docker-compose.yml through Compose's own loader (compose-go, what `docker compose` runs), with
.env.example as its environment: the schema test cannot see cross-references such as a service
on an undefined network or depending on a missing service; the loader refuses both."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from boardstream.settings import PROJECT_ROOT

TOOL = PROJECT_ROOT / "tools" / "compose-check"
GO_FALLBACK = Path("/usr/local/go/bin/go")


def go() -> str:
    found = shutil.which("go") or (str(GO_FALLBACK) if GO_FALLBACK.exists() else None)
    if found is None:
        pytest.fail(f"no Go toolchain: put go on PATH or install it at {GO_FALLBACK}")
    return found


@pytest.fixture(scope="module")
def compose_check(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The loader program, built from the committed go.mod/go.sum (modules: bin/setup)."""
    binary = tmp_path_factory.mktemp("compose-check") / "compose-check"
    build = subprocess.run(
        [go(), "build", "-o", str(binary), "."],
        cwd=TOOL,
        env={**os.environ, "GOFLAGS": "-mod=readonly"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert build.returncode == 0, f"go build failed: {build.stderr}"
    return binary


def load(compose_check: Path, compose_file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(compose_check), str(compose_file), str(PROJECT_ROOT / ".env.example")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def variant(tmp_path: Path, service: str, **changes: Any) -> Path:
    """docker-compose.yml with one service changed, written beside nothing else."""
    document = yaml.safe_load((PROJECT_ROOT / "docker-compose.yml").read_text())
    document["services"][service].update(changes)
    path = tmp_path / "docker-compose.yml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_the_compose_file_loads(compose_check: Path) -> None:
    result = load(compose_check, PROJECT_ROOT / "docker-compose.yml")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == (
        "ok: 11 services: airflow-api-server airflow-dag-processor airflow-init "
        "airflow-scheduler airflow-triggerer datanode kafka namenode postgres spark-master "
        "spark-worker\n"
    )


def test_an_undefined_network_is_refused(compose_check: Path, tmp_path: Path) -> None:
    result = load(compose_check, variant(tmp_path, "kafka", networks=["nowhere"]))
    assert result.returncode == 1
    assert result.stderr == (
        'compose-check: service "kafka" refers to undefined network nowhere: '
        "invalid compose project\n"
    )


def test_depending_on_a_missing_service_is_refused(compose_check: Path, tmp_path: Path) -> None:
    depends_on = {"spark-leader": {"condition": "service_healthy"}}
    result = load(compose_check, variant(tmp_path, "spark-worker", depends_on=depends_on))
    assert result.returncode == 1
    assert result.stderr == (
        'compose-check: service "spark-worker" depends on undefined service "spark-leader": '
        "invalid compose project\n"
    )


def scaling_conflicts(service: dict[str, Any]) -> list[str]:
    """What stops `docker compose up --scale NAME=N` from starting N copies of a service: a
    fixed container name, or a fixed host port (the second copy cannot bind it)."""
    found = [f"container_name {service['container_name']}"] if "container_name" in service else []
    for port in service.get("ports", []):
        published = port.get("published") if isinstance(port, dict) else None
        if isinstance(port, str | int) and ":" in str(port):
            published = str(port).rsplit(":", 1)[0]
        if published:
            found.append(f"host port {published}")
    return found


def test_spark_worker_can_be_scaled(compose_check: Path) -> None:
    """docs/DOCKER_COMPOSE.md's `docker compose up -d --scale spark-worker=3`, short of a Docker
    engine: the file loads, and nothing in the service keeps three copies from running side by
    side."""
    assert load(compose_check, PROJECT_ROOT / "docker-compose.yml").returncode == 0
    services = yaml.safe_load((PROJECT_ROOT / "docker-compose.yml").read_text())["services"]
    assert scaling_conflicts(services["spark-worker"]) == []
    # The check sees both conflicts: the master's UI port, and a name.
    assert scaling_conflicts(services["spark-master"]) == ["host port ${SPARK_UI_PORT}"]
    assert scaling_conflicts({"container_name": "w", "ports": [{"published": 1, "target": 2}]}) == [
        "container_name w",
        "host port 1",
    ]
