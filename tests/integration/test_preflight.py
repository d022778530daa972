"""Refuse fast: every job, started as a user starts it (the `boardstream` command) or as
spark-submit and Airflow start it (its ``jobs/*.py`` main), checks its broker, its database and
its checkpoints' HDFS NameNode before Spark: when one does not answer, one line naming it on
stderr and exit 2, in seconds."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from boardstream.settings import PROJECT_ROOT, Settings
from tests.fixtures import cli, cli_env, free_port, isolated_settings

TIMEOUT_S = 2.0  # BOARDSTREAM_CONNECT_TIMEOUT_S: how long each service is given to answer

# Each way a job is started: the `boardstream` command, or the job's main under spark-submit.
COMMANDS = {
    "join": ["job", "run", "board-detail-join"],
    "sink": ["job", "run", "board-detail-sink", "--", "--trigger", "available-now"],
    # (their flags as a user gives them: missing ones are refused first, before any service)
    "table-count": ["job", "run", "table-count", "--source-topic", "a", "--output-topic", "b"],
    "session-count": [
        "job",
        "run",
        "session-count",
        "--source-topic",
        "a",
        "--output-topic",
        "b",
        "--gap",
        "5m",
    ],
    "window-count": [
        "job",
        "run",
        "window-count",
        "--source-topic",
        "a",
        "--output-topic",
        "b",
        "--size",
        "1m",
    ],
    "aggregate": ["aggregate", "boards-per-member"],
    "compaction": ["compaction", "measure"],
    "compaction-apply": ["compaction", "apply", "--execute"],
    "reconcile": ["reconcile", "--full"],
    "repair": ["repair", "--run", "1"],
}
MAINS = {
    "sink-main": ["board_detail_sink.py"],
    "reconcile-main": ["reconcile.py"],
    "repair-main": ["repair.py", "--run", "1"],
}
# Every Spark job takes its checkpoint's lease in the database, or loads into it.
USES_DATABASE = tuple(command for command in COMMANDS if command != "compaction")


def refusal(settings: Settings, command: str, extra_env: dict[str, str]) -> str:
    """Run ``command`` (a key of COMMANDS or MAINS); assert it refused as promised; its line."""
    began = time.monotonic()
    if command in MAINS:
        application, *args = MAINS[command]
        done = subprocess.run(
            [sys.executable, str(PROJECT_ROOT / "jobs" / application), *args],
            capture_output=True,
            text=True,
            env=cli_env(settings, extra_env),
            timeout=120,
            check=False,
        )
    else:
        done = cli(settings, *COMMANDS[command], extra_env=extra_env)
    elapsed = time.monotonic() - began
    print(f"{command}: refused in {elapsed:.1f} s")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("command", [*COMMANDS, *MAINS])
def test_no_broker_is_one_line_and_exit_2(command: str, tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, connect_timeout_s=TIMEOUT_S)  # nothing at its port
    line = refusal(settings, command, {"BOARDSTREAM_DATABASE_URL": f"sqlite:///{tmp_path}/db"})
    assert f"no Kafka broker answered at {settings.bootstrap_servers}" in line
    assert "not started" in line


@pytest.mark.parametrize("command", [*USES_DATABASE, *MAINS])
def test_database_down_is_one_line_and_exit_2(command: str, kafka: Settings) -> None:
    url = f"postgresql+psycopg2://boardstream:s3cret@localhost:{free_port()}/boardstream"
    line = refusal(kafka, command, {"BOARDSTREAM_DATABASE_URL": url})
    assert "the database at postgresql+psycopg2://boardstream:***@localhost:" in line
    assert "s3cret" not in line


@pytest.mark.parametrize("command", ["join", "reconcile-main"])
def test_checkpoints_on_an_hdfs_nobody_answers_is_one_line_and_exit_2(
    command: str, kafka: Settings, tmp_path: Path
) -> None:
    root = f"hdfs://127.0.0.1:{free_port()}/boardstream/checkpoints"
    env = {
        "BOARDSTREAM_DATABASE_URL": f"sqlite:///{tmp_path}/db",
        "BOARDSTREAM_CHECKPOINT_ROOT": root,
    }
    line = refusal(kafka, command, env)
    assert (
        f"the HDFS NameNode at {root.rsplit('/boardstream', 1)[0]} (the checkpoints' root " in line
    )
    assert "not started" in line
