"""`boardstream stack` and the CLI against real processes: start once, stop only what it started,
and fail fast with a clear message when the broker is not there."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
import sqlalchemy

from boardstream.stack.ports import listeners
from boardstream.stack.processes import session_members
from tests.fixtures import cli, free_port, isolated_settings, world_readable_dir


def _running(pid: str) -> bool:
    """True while ``pid`` exists and is not a zombie waiting for its (re)parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def own_stack():
    settings = isolated_settings(world_readable_dir("boardstream-stack-"))
    yield settings
    cli(settings, "stack", "down")
    shutil.rmtree(settings.var_dir, ignore_errors=True)


def test_up_twice_starts_once_and_down_stops_only_ours(own_stack) -> None:
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        first = cli(own_stack, "stack", "up", "--postgres")
        assert first.returncode == 0, first.stderr
        assert "kafka started (pid" in first.stdout
        assert "postgres started (pid" in first.stdout
        *services, database = first.stdout.splitlines()
        pids = {line.split()[0]: line.split("pid ")[1].split(")")[0] for line in services}
        # The PostgreSQL it started is not the platform's until the environment says so.
        postgres = f"postgresql+psycopg2://boardstream@localhost:{own_stack.postgres_port}"
        assert database == (
            f"the platform's database: sqlite:///{own_stack.var_dir}/boardstream.db "
            "(BOARDSTREAM_DATABASE_URL unset); the local PostgreSQL is not used by it: to use "
            f"it, export BOARDSTREAM_DATABASE_URL={postgres}/boardstream"
        )

        second = cli(own_stack, "stack", "up", "--postgres")
        assert second.returncode == 0, second.stderr
        assert f"kafka already running (pid {pids['kafka']})" in second.stdout
        assert f"postgres already running (pid {pids['postgres']})" in second.stdout

        status = cli(own_stack, "stack", "status").stdout
        assert f"running (pid {pids['kafka']})" in status

        engine = sqlalchemy.create_engine(f"{postgres}/boardstream")
        with engine.connect() as connection:
            assert connection.execute(sqlalchemy.text("select 41 + 1")).scalar() == 42
        engine.dispose()

        down = cli(own_stack, "stack", "down")
        assert down.stdout.splitlines() == ["postgres stopped", "kafka stopped"]
        for pid in pids.values():
            assert not _running(pid), f"pid {pid} still running after down"
        assert bystander.poll() is None, "down must not touch processes it did not start"
        assert cli(own_stack, "stack", "down").stdout.strip() == "nothing was running"
    finally:
        bystander.kill()


def test_unreachable_broker_fails_fast_and_clearly(tmp_path) -> None:
    settings = isolated_settings(
        tmp_path, bootstrap_servers=f"localhost:{free_port()}", connect_timeout_s=3.0
    )
    # Bounded: a hang past the subprocess timeout fails the test with TimeoutExpired.
    result = cli(settings, "produce", "--members", "10", "--boards", "10", timeout=60)
    assert result.returncode == 1
    assert "boardstream: error: no Kafka broker answered at" in result.stderr
    assert "within 3s" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "manifests").exists()


def test_unknown_topic_is_named(kafka) -> None:
    result = cli(kafka, "topics", "describe", "--topic", "no-such-topic")
    assert result.returncode == 1
    assert "unknown topic(s) no-such-topic" in result.stderr
    assert "Traceback" not in result.stderr


def test_produce_to_missing_topics_is_refused(kafka) -> None:
    missing = {
        "BOARDSTREAM_BOARD_TOPIC": "absent-board",
        "BOARDSTREAM_MEMBER_TOPIC": "absent-member",
    }
    result = cli(kafka, "produce", "--members", "5", "--boards", "5", extra_env=missing)
    assert result.returncode == 1
    assert "unknown topic(s) absent-member, absent-board" in result.stderr


def test_down_stops_every_airflow_process_and_up_refuses_its_held_port(own_stack) -> None:
    """Airflow standalone starts its scheduler, DAG processor, triggerer and api-server as
    processes of its own: `down` must leave none of them (a listing of its session before and
    after), and a second stack on the same port must be refused, naming the api-server. (On a
    quiet machine standalone stops its components itself within the stop timeout, so stopping
    the leader alone passes here too; tests/unit/stack/test_processes.py holds a session member
    that ignores the stop signal, which that variant leaves running.)"""
    port = str(free_port())
    env = {"BOARDSTREAM_AIRFLOW_PORT": port}
    up = cli(own_stack, "stack", "up", "--airflow", extra_env=env, timeout=600)
    assert up.returncode == 0, up.stdout + up.stderr
    leader = int(up.stdout.split("airflow started (pid ")[1].split(")")[0])
    before = session_members(leader)
    assert leader in before and len(before) >= 5, before  # standalone and its components

    other = isolated_settings(world_readable_dir("boardstream-stack-"))
    try:
        refused = cli(other, "stack", "up", "--airflow", extra_env=env)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert refused.stderr.startswith(f"boardstream: error: port {port} (airflow's api) is held")
        assert refused.stderr.count("\n") == 1
        assert "kafka started" not in refused.stdout  # nothing was started
    finally:
        cli(other, "stack", "down")
        shutil.rmtree(other.var_dir, ignore_errors=True)

    down = cli(own_stack, "stack", "down", extra_env=env, timeout=120)
    assert down.stdout.splitlines() == ["airflow stopped", "kafka stopped"]
    assert session_members(leader) == []
    assert int(port) not in listeners()
