"""The checkpoint lease across real processes: refused while another holds it, free the moment
that process dies (kill -9 included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from boardstream.spark import checkpoint_lease
from boardstream.spark.checkpoint_lease import CheckpointBusyError, hold, holder

HOLDER = """
import sys, time
from pathlib import Path
from boardstream.spark.checkpoint_lease import hold
with hold(Path(sys.argv[1]), "board-detail-join", {"application_id": "app-42"}):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def other_process(tmp_path: Path):
    """A second process holding the lease of ``tmp_path / 'ckpt'`` until killed."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path / "ckpt")], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline() == "held\n"
    yield process
    process.kill()
    process.wait()


def test_a_lease_held_elsewhere_names_its_holder_and_refuses_a_second(
    tmp_path: Path, other_process: subprocess.Popen
) -> None:
    owner = holder(tmp_path / "ckpt")
    assert owner is not None
    assert (owner.pid, owner.job) == (other_process.pid, "board-detail-join")
    assert owner.details == {"application_id": "app-42"}
    assert abs(owner.since_ms - time.time() * 1000) < 60_000
    with (
        pytest.raises(
            CheckpointBusyError, match=rf"in use by board-detail-join \(pid {owner.pid} "
        ) as refused,
        hold(tmp_path / "ckpt", "board-detail-join", {}),
    ):
        pytest.fail("two holders of one checkpoint")
    assert "app-42" in str(refused.value) and "action=stop" in str(refused.value)


def test_a_killed_holder_leaves_no_lease_behind(
    tmp_path: Path, other_process: subprocess.Popen
) -> None:
    os.kill(other_process.pid, signal.SIGKILL)
    other_process.wait()
    assert holder(tmp_path / "ckpt") is None
    with hold(tmp_path / "ckpt", "board-detail-sink", {"trigger": "processing-time"}) as mine:
        assert mine.pid == os.getpid()
        assert holder(tmp_path / "ckpt") == mine
    assert holder(tmp_path / "ckpt") is None


def test_no_lease_file_is_no_holder(tmp_path: Path) -> None:
    assert holder(tmp_path / "never-run") is None
    assert not (tmp_path / "never-run").exists()


def test_the_lease_lives_beside_the_checkpoint_and_creates_no_checkpoint(tmp_path: Path) -> None:
    """A run refused after taking its lease (too few task slots, say) leaves no checkpoint."""
    with hold(tmp_path / "checkpoints" / "join", "board-detail-join", {}):
        pass
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["join.lease"]


def test_a_lease_file_being_written_is_still_held(tmp_path: Path) -> None:
    """A holder that has locked but not yet written its record is a holder all the same."""
    checkpoint = tmp_path / "ckpt"
    with hold(checkpoint, "board-detail-join", {}):
        checkpoint_lease.lease_path(checkpoint).write_text("")
        owner = holder(checkpoint)
    assert owner is not None and owner.pid == -1
