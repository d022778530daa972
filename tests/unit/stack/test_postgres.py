"""The local PostgreSQL without PostgreSQL (``subprocess.run``, ``glob``, ``os.geteuid``
replaced): the newest installed server version is found numerically; as root its commands run
as the ``postgres`` user; the exact initdb, pg_ctl and psql command lines; a cluster is
initialised once, the database created only when missing, the pid file written from
postmaster.pid; a failing command names itself with its output. On a host's address it listens
there, its URL names it, and pg_hba.conf trusts the host's subnets (once)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.stack import postgres
from boardstream.stack.postgres import Postgres, _bin_dir, _version_key

BIN = Path("/usr/lib/postgresql/16/bin")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(var_dir=tmp_path, postgres_port=6543)


@pytest.fixture
def user(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not root: commands run as they are."""
    monkeypatch.setattr(postgres.os, "geteuid", lambda: 1000)


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/usr/lib/postgresql/16/bin/initdb", 16),
        ("/usr/lib/postgresql/9/bin/initdb", 9),
        ("/usr/lib/postgresql/main/bin/initdb", 0),
    ],
)
def test_version_key(path: str, key: int) -> None:
    assert _version_key(path) == key


def test_the_newest_server_is_chosen_by_number(monkeypatch: pytest.MonkeyPatch) -> None:
    found = [f"/usr/lib/postgresql/{v}/bin/initdb" for v in ("9", "17", "15")]
    monkeypatch.setattr(postgres.glob, "glob", lambda pattern: list(found))
    assert _bin_dir() == Path("/usr/lib/postgresql/17/bin")


def test_without_debians_layout_initdb_is_found_on_the_path(monkeypatch, tmp_path: Path) -> None:
    real = tmp_path / "pg" / "bin" / "initdb"
    real.parent.mkdir(parents=True)
    real.write_text("")
    link = tmp_path / "initdb"
    link.symlink_to(real)
    monkeypatch.setattr(postgres.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(postgres.shutil, "which", lambda name: str(link))
    assert _bin_dir() == real.parent


def test_no_server_says_how_to_install_one(monkeypatch) -> None:
    monkeypatch.setattr(postgres.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(postgres.shutil, "which", lambda name: None)
    with pytest.raises(BoardstreamError) as missing:
        _bin_dir()
    assert str(missing.value) == (
        "PostgreSQL server binaries not found; bin/setup --postgres installs them "
        "(Debian package postgresql)"
    )


def test_where_it_lives_and_how_to_reach_it(settings: Settings) -> None:
    server = Postgres(settings)
    assert server.data_dir == settings.var_dir / "postgres" / "data"
    assert server.socket_dir == settings.var_dir / "postgres" / "run"
    assert server.process.marker == str(server.data_dir)
    assert server.process.pid_file == settings.var_dir / "run" / "postgres.pid"
    assert server.process.stop_signal == postgres.signal.SIGINT
    assert server.address == "localhost:6543"
    assert server.url == "postgresql+psycopg2://boardstream@localhost:6543/boardstream"


def test_as_root_commands_run_as_the_postgres_user(settings, monkeypatch) -> None:
    server = Postgres(settings)
    monkeypatch.setattr(postgres.os, "geteuid", lambda: 0)
    assert server._as_owner(["psql", "-c", "x"]) == [
        "runuser",
        "-u",
        "postgres",
        "--",
        "psql",
        "-c",
        "x",
    ]
    monkeypatch.setattr(postgres.os, "geteuid", lambda: 1000)
    assert server._as_owner(["psql"]) == ["psql"]


class Commands:
    """Stands in for initdb, pg_ctl and psql; ``exists`` is psql's answer to the query."""

    def __init__(self, server: Postgres) -> None:
        self.server = server
        self.seen: list[list[str]] = []
        self.exists = ""
        self.fail: str | None = None

    def run(self, command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert kwargs == {"capture_output": True, "text": True, "check": False}
        self.seen.append(command)
        tool = Path(command[0]).name
        if tool == self.fail:
            return subprocess.CompletedProcess(command, 1, "out\n", "err\n")
        if tool == "initdb":
            self.server.data_dir.mkdir(parents=True)
            (self.server.data_dir / "PG_VERSION").write_text("16")
        if tool == "pg_ctl":
            (self.server.data_dir / "postmaster.pid").write_text("4242\n/var/data\n")
        stdout = self.exists if "-tAc" in command else ""
        return subprocess.CompletedProcess(command, 0, stdout, "")


@pytest.fixture
def commands(settings, monkeypatch) -> Commands:
    fake = Commands(Postgres(settings))
    monkeypatch.setattr(postgres.subprocess, "run", fake.run)
    monkeypatch.setattr(postgres, "_bin_dir", lambda: BIN)
    return fake


def test_a_first_start_initialises_starts_and_creates_the_database(
    user, commands: Commands, settings: Settings
) -> None:
    server = commands.server
    assert server.start(timeout_s=30) == 4242
    assert server.process.pid_file.read_text() == "4242"
    run_dir, data = server.socket_dir, str(server.data_dir)
    psql = [str(BIN / "psql"), "-h", str(run_dir), "-p", "6543", "-U", "boardstream"]
    assert commands.seen == [
        [str(BIN / "initdb"), "-D", data, "-U", "boardstream", "--auth=trust", "-E", "UTF8"],
        [
            str(BIN / "pg_ctl"),
            "-D",
            data,
            "-l",
            str(settings.var_dir / "log" / "postgres.log"),
            "-o",
            f"-p 6543 -k {run_dir} -c listen_addresses=localhost -c fsync=off",
            "-w",
            "-t",
            "30",
            "start",
        ],
        [
            *psql,
            "-d",
            "postgres",
            "-tAc",
            "SELECT 1 FROM pg_database WHERE datname = 'boardstream'",
        ],
        [*psql, "-d", "postgres", "-c", "CREATE DATABASE boardstream"],
    ]
    assert run_dir.is_dir() and server.log_file.parent.is_dir()


def test_a_restart_keeps_the_cluster_and_the_database(user, commands: Commands) -> None:
    commands.server.start()
    commands.seen.clear()
    commands.exists = "1\n"
    commands.server.start()
    assert [Path(c[0]).name for c in commands.seen] == ["pg_ctl", "psql"]


def test_a_failing_command_names_itself_with_its_output(user, commands: Commands) -> None:
    commands.fail = "pg_ctl"
    with pytest.raises(BoardstreamError) as failed:
        commands.server.start()
    assert str(failed.value) == f"{BIN / 'pg_ctl'} failed:\nout\nerr\n"
    assert not commands.server.process.pid_file.exists()


def test_the_host_setting_and_its_env_var(monkeypatch, tmp_path: Path) -> None:
    assert Settings(var_dir=tmp_path).postgres_host == "localhost"
    monkeypatch.setenv("BOARDSTREAM_POSTGRES_HOST", "10.232.2.5")
    assert Settings(var_dir=tmp_path).postgres_host == "10.232.2.5"


def test_on_a_hosts_address_it_listens_there_and_trusts_its_subnets(
    user, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = Commands(Postgres(settings.model_copy(update={"postgres_host": "10.232.2.5"})))
    monkeypatch.setattr(postgres.subprocess, "run", fake.run)
    monkeypatch.setattr(postgres, "_bin_dir", lambda: BIN)
    server = fake.server
    assert server.address == "10.232.2.5:6543"
    assert server.url == "postgresql+psycopg2://boardstream@10.232.2.5:6543/boardstream"
    hba = server.data_dir / "pg_hba.conf"
    server.data_dir.mkdir(parents=True)
    hba.write_text("local all all trust\n")  # as initdb leaves it, in short
    (server.data_dir / "PG_VERSION").write_text("16")  # a cluster made before
    server.start()
    server.start()
    pg_ctl = [c for c in fake.seen if Path(c[0]).name == "pg_ctl"]
    assert [c[c.index("-o") + 1] for c in pg_ctl] == [
        f"-p 6543 -k {server.socket_dir} -c listen_addresses=10.232.2.5 -c fsync=off"
    ] * 2
    assert hba.read_text() == (
        "local all all trust\n"
        "# boardstream: clients of this host's subnets\n"
        "host all all samenet trust\n"
    )
