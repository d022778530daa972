"""ManagedProcess: a pid file counts only while its process still carries the marker; stopping it
stops its whole session (children and grandchildren, those ignoring the signal too) and nothing
else; processes started together are awaited together, and stopped together when one fails."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.stack.processes import (
    LocalService,
    ManagedProcess,
    Starting,
    await_started,
    session_members,
)


def managed(tmp_path: Path, marker: str) -> ManagedProcess:
    return ManagedProcess("sleeper", tmp_path / "run" / "sleeper.pid", marker=marker)


def test_a_started_process_is_ours_until_stopped(tmp_path: Path) -> None:
    marker = str(tmp_path / "marker")
    process = managed(tmp_path, marker)
    handle = process.start(
        [sys.executable, "-c", "import time; time.sleep(60)", marker], tmp_path / "log"
    )
    assert handle.poll() is None
    # The command line can read empty for a moment right after the exec; not for long.
    deadline = time.monotonic() + 10
    while process.pid() != handle.pid and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.pid() == handle.pid
    assert process.stop(timeout_s=5) is True
    assert handle.poll() is not None
    assert process.pid() is None
    assert not process.pid_file.exists()
    assert process.stop() is False


def test_an_exit_shows_on_the_handle_with_its_code(tmp_path: Path) -> None:
    marker = str(tmp_path / "marker")
    handle = managed(tmp_path, marker).start(
        [sys.executable, "-c", "raise SystemExit(3)", marker], tmp_path / "log"
    )
    assert handle.wait(timeout=10) == 3


def test_a_pid_file_naming_someone_elses_process_is_stale(tmp_path: Path) -> None:
    process = managed(tmp_path, "a marker no process has")
    process.pid_file.parent.mkdir(parents=True)
    process.pid_file.write_text("1")  # init: alive, but not ours
    assert process.pid() is None
    assert not process.pid_file.exists()


def test_a_process_not_inheriting_gets_the_given_environment_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOARDSTREAM_VAR_DIR", "/not/for/it")
    marker = str(tmp_path / "marker")
    code = "import os; print(sorted(k for k in os.environ if k[:4] in ('BSX', 'BOAR')))"
    for inherit in (False, True):
        managed(tmp_path, marker).start(
            [sys.executable, "-c", code, marker],
            tmp_path / "log",
            env={"BSX": "1"},
            inherit=inherit,
        ).wait(timeout=10)
    first, second = (tmp_path / "log").read_text().splitlines()
    assert first == "['BSX']"
    assert second == "['BOARDSTREAM_VAR_DIR', 'BSX']"


# The leader (sh) runs a sleep, a subshell that ignores SIGTERM and SIGINT and runs a sleep of its
# own (which inherits that), and a sleep in the foreground: five processes in one session.
FAMILY = 'sleep 300 & (trap "" TERM INT; sleep 300; :) & sleep 300; wait'


def members_once_started(session: int, count: int) -> list[int]:
    deadline = time.monotonic() + 10
    while len(members := session_members(session)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return members


def test_stop_stops_the_whole_session_and_nothing_else(tmp_path: Path) -> None:
    marker = str(tmp_path / "marker")
    process = managed(tmp_path, marker)
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)
    handle = process.start(["sh", "-c", FAMILY, marker], tmp_path / "log")
    try:
        members = members_once_started(handle.pid, 5)
        assert len(members) == 5 and handle.pid in members, members
        assert process.stop(timeout_s=1) is True
        assert session_members(handle.pid) == []
        assert bystander.poll() is None, "a process of another session is not touched"
        assert not process.pid_file.exists()
    finally:
        for pid in session_members(handle.pid):  # left by a broken stop
            os.kill(pid, signal.SIGKILL)
        handle.wait()
        os.kill(bystander.pid, signal.SIGKILL)
        bystander.wait()


def test_a_started_leader_that_exited_leaves_no_session_behind(tmp_path: Path) -> None:
    """``stop_started`` (a service that failed to start): its leader gone, its children are
    stopped all the same."""
    marker = str(tmp_path / "marker")
    process = managed(tmp_path, marker)
    handle = process.start(["sh", "-c", "sleep 300 & exit 3", marker], tmp_path / "log")
    try:
        assert handle.wait(timeout=10) == 3
        assert len(members_once_started(handle.pid, 1)) == 1
        process.stop_started(handle, timeout_s=1)
        assert session_members(handle.pid) == []
    finally:
        for pid in session_members(handle.pid):
            os.kill(pid, signal.SIGKILL)


class Sleeper(LocalService):
    """A service whose process sleeps, or with ``fails``, writes a line and exits 3."""

    def __init__(self, settings: Settings, name: str) -> None:
        self.name = name
        super().__init__(settings, marker=str(settings.var_dir / name))

    def launch(self, fails: bool) -> Starting:
        code = (
            "print('cannot bind', flush=True); raise SystemExit(3)"
            if fails
            else "import time; time.sleep(60)"
        )
        process = self.process.start(
            [sys.executable, "-c", code, self.process.marker], self.log_file
        )
        return Starting(self, process, f"the {self.name}")


def test_one_of_several_starting_processes_exiting_stops_the_rest(tmp_path: Path) -> None:
    settings = Settings(var_dir=tmp_path)
    first, second = Sleeper(settings, "first"), Sleeper(settings, "second")
    starting = [first.launch(fails=False), second.launch(fails=True)]
    with pytest.raises(BoardstreamError) as failed:
        await_started(starting, lambda: False, timeout_s=30)
    assert str(failed.value) == (
        f"the second exited (code 3) while starting; last lines of {second.log_file}:\ncannot bind"
    )
    assert starting[0].process.poll() is not None, "the first was stopped"
    assert not first.process.pid_file.exists()


def test_several_processes_not_ready_in_time_are_all_stopped(tmp_path: Path) -> None:
    settings = Settings(var_dir=tmp_path)
    sleepers = [Sleeper(settings, name) for name in ("a", "b")]
    starting = [sleeper.launch(fails=False) for sleeper in sleepers]
    with pytest.raises(BoardstreamError, match=r"^the a and the b were not ready within 1s; see "):
        await_started(starting, lambda: False, timeout_s=1)
    assert all(s.process.poll() is not None for s in starting)
