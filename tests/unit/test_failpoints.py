"""Failpoints fire exactly on their n-th pass, kill the whole process group, and reject typos."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

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


def test_other_failpoints_and_an_empty_setting_do_nothing() -> None:
    for points in ("", "join.after_output@1"):
        done = run(points)
        assert (done.returncode, done.stdout.split()) == (0, ["1", "2", "3"])


@pytest.mark.parametrize("entry", ["sink.after_write", "sink.after_write@0", "@2", "x@two"])
def test_a_malformed_entry_is_an_error(entry: str, monkeypatch) -> None:
    monkeypatch.setenv(failpoints.ENV, entry)
    with pytest.raises(ValueError, match="is not NAME@N"):
        failpoints.armed()
