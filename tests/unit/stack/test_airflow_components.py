"""Airflow's components without standalone: the database migrated first, then each component
started; SIGINT stops them all (exit 0), one exiting stops the others (exit 1), and a failed
migration starts none."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from boardstream.stack.airflow_components import COMPONENTS

# Stands in for `airflow`: notes each command it is run with, then `db migrate` exits with the
# code in the file `migrate`, a component waits (or exits 3 if named in the file `exits`).
FAKE_AIRFLOW = """#!{python}
import os, sys, time
from pathlib import Path
here = Path(__file__).parent
with open(here / "ran", "a") as ran:
    ran.write(f"{{os.getpid()}} {{' '.join(sys.argv[1:])}}\\n")
if sys.argv[1:] == ["db", "migrate"]:
    sys.exit(int((here / "migrate").read_text()))
if (here / "exits").exists() and sys.argv[1] == (here / "exits").read_text():
    time.sleep(1)
    sys.exit(3)
time.sleep(300)
"""
RUNNER = (
    "import sys; from boardstream.stack.airflow_components import run_components; "
    "sys.exit(run_components(sys.argv[1]))"
)


def runner(tmp_path: Path, migrate: int = 0, exits: str | None = None) -> subprocess.Popen[str]:
    airflow = tmp_path / "airflow"
    airflow.write_text(FAKE_AIRFLOW.format(python=sys.executable))
    airflow.chmod(0o755)
    (tmp_path / "migrate").write_text(str(migrate))
    if exits:
        (tmp_path / "exits").write_text(exits)
    return subprocess.Popen(
        [sys.executable, "-c", RUNNER, str(airflow)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )


def ran(tmp_path: Path) -> list[tuple[int, str]]:
    lines = (tmp_path / "ran").read_text().splitlines() if (tmp_path / "ran").exists() else []
    return [(int(pid), command) for pid, command in (line.split(" ", 1) for line in lines)]


def await_components(tmp_path: Path, timeout_s: float = 30) -> list[tuple[int, str]]:
    deadline = time.monotonic() + timeout_s
    while len(ran(tmp_path)) < 1 + len(COMPONENTS):
        assert time.monotonic() < deadline, ran(tmp_path)
        time.sleep(0.1)
    return ran(tmp_path)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_migrates_first_then_runs_every_component_until_sigint(tmp_path: Path) -> None:
    process = runner(tmp_path)
    started = await_components(tmp_path)
    commands = [command for _, command in started]
    # The components start together: they note themselves in any order.
    assert commands[0] == "db migrate" and sorted(commands[1:]) == sorted(COMPONENTS)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 0, process.stdout.read() if process.stdout else ""
    assert all(gone(pid) for pid, _ in started)


def test_one_component_exiting_stops_the_others(tmp_path: Path) -> None:
    process = runner(tmp_path, exits="api-server")
    started = await_components(tmp_path)
    assert process.wait(timeout=30) == 1
    output = process.stdout.read() if process.stdout else ""
    assert "airflow api-server exited (code 3): stopping the others" in output
    assert all(gone(pid) for pid, _ in started)


def test_a_failed_migration_starts_no_component(tmp_path: Path) -> None:
    process = runner(tmp_path, migrate=2)
    assert process.wait(timeout=30) == 1
    assert [command for _, command in ran(tmp_path)] == ["db migrate"]
