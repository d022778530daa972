"""Failpoints fire exactly on their n-th pass, kill the whole process group, and reject typos."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from boardstream import failpoints

PASS_THREE_TIMES = """
from boardstream.failpoints import failpoint
for n in range(1, 4):
    failpoint("sink.after_write")
    print(n, flush=True)
"""


def run(points: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PASS_THREE_TIMES],
        env={**os.environ, failpoints.ENV: points},
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,  # its own process group, which the failpoint kills
    )


def test_the_nth_pass_kills_the_process_group() -> None:
    done = run("sink.after_write@2")
    assert done.returncode == -signal.SIGKILL
    assert done.stdout.split() == ["1"]


def test_a_stop_failpoint_freezes_the_process_group_until_continued() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", PASS_THREE_TIMES],
        env={**os.environ, failpoints.ENV: "sink.after_write@2:stop"},
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().split() == ["1"]
    # Stopped at its second pass: neither exited nor printing, until SIGCONT.
    deadline = time.monotonic() + 30
    while _state(process.pid) != "T":
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGCONT)
    assert process.wait(timeout=60) == 0
    assert process.stdout.read().split() == ["2", "3"]


def _state(pid: int) -> str:
    """The process's state letter in /proc (T: stopped)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def test_other_failpoints_and_an_empty_setting_do_nothing() -> None:
    for points in ("", "join.after_output@1"):
        done = run(points)
        assert (done.returncode, done.stdout.split()) == (0, ["1", "2", "3"])


@pytest.mark.parametrize(
    "entry", ["sink.after_write", "sink.after_write@0", "@2", "x@two", "x@2:pause"]
)
def test_a_malformed_entry_is_an_error(entry: str, monkeypatch) -> None:
    monkeypatch.setenv(failpoints.ENV, entry)
    with pytest.raises(ValueError, match="is not NAME@N or NAME@N:stop"):
        failpoints.armed()
