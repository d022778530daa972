"""`cp .env.example .env`, then the settings and `boardstream stack status` with that file: every
variable it names (set or commented out) is one something reads, so a typo'd name that would be
silently ignored fails here."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from dotenv import dotenv_values

from boardstream.settings import PROJECT_ROOT, Settings
from tests.fixtures import cli, isolated_settings

pytestmark = pytest.mark.integration

# Airflow reads AIRFLOW_CONN_<ID> as the connection <id>; these two are the ones the DAGs use.
AIRFLOW_CONNECTIONS = {"AIRFLOW_CONN_KAFKA_DEFAULT", "AIRFLOW_CONN_SPARK_DEFAULT"}


def named(env_file: Path) -> dict[str, bool]:
    """Each variable the file names: True if set, False if only in a `# NAME=...` comment."""
    names = {}
    for line in env_file.read_text().splitlines():
        match = re.match(r"^(#\s*)?([A-Z][A-Z0-9_]*)=", line)
        if match:
            names[match.group(2)] = match.group(1) is None
    return names


def test_env_example_is_what_settings_read(tmp_path: Path) -> None:
    copy = subprocess.run(
        ["cp", ".env.example", str(tmp_path / ".env")],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (copy.returncode, copy.stderr) == (0, "")
    env_file = tmp_path / ".env"
    names = named(env_file)
    assert "BOARDSTREAM_BOOTSTRAP_SERVERS" in names and "POSTGRES_PASSWORD" in names

    fields = {f"BOARDSTREAM_{field.upper()}" for field in Settings.model_fields}
    compose = set(
        re.findall(r"\$\{([A-Z][A-Z0-9_]*)", (PROJECT_ROOT / "docker-compose.yml").read_text())
    )
    unread = {
        name
        for name in names
        if name not in fields and name not in compose and name not in AIRFLOW_CONNECTIONS
    }
    assert unread == set(), f".env.example names variables nothing reads: {sorted(unread)}"
    # And docker compose finds every variable it interpolates there.
    assert compose - {name for name, is_set in names.items() if is_set} == set()

    values = {k: v for k, v in dotenv_values(env_file).items() if v is not None}
    settings = Settings(_env_file=env_file)
    for name, value in values.items():
        if name in fields:
            field = name.removeprefix("BOARDSTREAM_").lower()
            assert str(getattr(settings, field)) == value, name

    # `boardstream stack status` with the file's settings, in a var dir of its own (nothing
    # started there): the addresses are the file's.
    result = cli(isolated_settings(tmp_path / "var"), "stack", "status", extra_env=values)
    assert (result.returncode, result.stderr) == (0, "")
    assert [line.split() for line in result.stdout.splitlines()] == [
        ["kafka", "stopped", f"localhost:{values['BOARDSTREAM_BOOTSTRAP_SERVERS'].split(':')[1]}"],
        ["postgres", "stopped", f"localhost:{values['BOARDSTREAM_POSTGRES_PORT']}"],
        [
            "namenode",
            "stopped",
            f"hdfs://{values['BOARDSTREAM_HDFS_HOST']}:{values['BOARDSTREAM_HDFS_NAMENODE_PORT']}",
        ],
        [
            "datanode",
            "stopped",
            f"http://{values['BOARDSTREAM_HDFS_HOST']}:"
            f"{values['BOARDSTREAM_HDFS_DATANODE_HTTP_PORT']}",
        ],
        ["spark-master", "stopped", f"spark://127.0.0.1:{values['BOARDSTREAM_SPARK_MASTER_PORT']}"],
        [
            "spark-worker",
            "stopped",
            f"http://127.0.0.1:{values['BOARDSTREAM_SPARK_WORKER_UI_PORT']}",
        ],
        ["airflow", "stopped", f"http://localhost:{values['BOARDSTREAM_AIRFLOW_PORT']}"],
        # The file leaves the database URL commented out: the embedded SQLite in the var dir.
        f"the platform's database: sqlite:///{tmp_path}/var/boardstream.db "
        "(BOARDSTREAM_DATABASE_URL unset)".split(),
    ]
