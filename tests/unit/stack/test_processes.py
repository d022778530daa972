"""ManagedProcess: a pid file counts only while its process still carries the marker."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from boardstream.stack.processes import ManagedProcess


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
