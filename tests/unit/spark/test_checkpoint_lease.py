"""The checkpoint lease across real processes: refused while another holds it (after waiting its
TTL), free once that process dies (kill -9 included) and its TTL has run out, never sooner, and
one lease per checkpoint however it is named."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from boardstream.leases import Leases, leases
from boardstream.settings import Settings
from boardstream.spark.checkpoint_lease import (
    CheckpointBusyError,
    hold,
    holder,
    last_holder,
    lease_name,
)
from tests.fixtures import isolated_settings

TTL_S = 2.0
HOLDER = """
import sys, time
from pathlib import Path
from boardstream.settings import Settings
from boardstream.spark.checkpoint_lease import hold
settings = Settings(var_dir=Path(sys.argv[1]), lease_ttl_s=float(sys.argv[2]))
details = {"application_id": "app-42"}
# As a job's main holds it: this process is the driver.
with hold(settings, Path(sys.argv[3]), "board-detail-join", details, exit_when_lost=True):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return isolated_settings(tmp_path, lease_ttl_s=TTL_S)


@pytest.fixture
def other_process(settings: Settings, tmp_path: Path):
    """A second process holding the lease of ``tmp_path / 'ckpt'`` until killed."""
    with holding(HOLDER, settings, TTL_S, tmp_path / "ckpt") as process:
        yield process


def test_a_lease_held_elsewhere_names_its_holder_and_refuses_a_second(
    settings: Settings, tmp_path: Path, other_process: subprocess.Popen
) -> None:
    owner = holder(settings, tmp_path / "ckpt")
    assert owner is not None
    assert (owner.pid, owner.job) == (other_process.pid, "board-detail-join")
    assert owner.details == {"application_id": "app-42"}
    assert abs(owner.since_ms - time.time() * 1000) < 60_000
    with (
        pytest.raises(
            CheckpointBusyError, match=rf"in use by board-detail-join \(pid {owner.pid} "
        ) as refused,
        hold(settings, tmp_path / "ckpt", "board-detail-join", {}),
    ):
        pytest.fail("two holders of one checkpoint")
    assert "app-42" in str(refused.value) and "action=stop" in str(refused.value)
    time.sleep(TTL_S * 1.5)  # renewed while its holder lives
    assert holder(settings, tmp_path / "ckpt") == owner


def test_a_killed_holders_lease_is_free_after_its_ttl_and_not_before(
    settings: Settings, tmp_path: Path, other_process: subprocess.Popen
) -> None:
    owner = holder(settings, tmp_path / "ckpt")
    os.kill(other_process.pid, signal.SIGKILL)
    other_process.wait()
    killed = time.monotonic()
    assert holder(settings, tmp_path / "ckpt") == owner  # kill -9 released nothing
    with hold(settings, tmp_path / "ckpt", "board-detail-sink", {"trigger": "rt"}) as mine:
        assert time.monotonic() - killed >= TTL_S * 2 / 3  # waited: renewed every third of it
        assert mine.epoch == 2
        now = holder(settings, tmp_path / "ckpt")
        assert now is not None and (now.pid, now.job) == (os.getpid(), "board-detail-sink")
    assert holder(settings, tmp_path / "ckpt") is None
    assert last_holder(settings, tmp_path / "ckpt") == now != owner


def test_never_held_is_no_holder_and_holding_creates_no_file(
    settings: Settings, tmp_path: Path
) -> None:
    """A run refused after taking its lease (too few task slots, say) leaves no checkpoint."""
    assert holder(settings, tmp_path / "never-run") is None
    assert last_holder(settings, tmp_path / "never-run") is None
    with hold(settings, tmp_path / "checkpoints" / "join", "board-detail-join", {}):
        pass
    assert not (tmp_path / "checkpoints").exists()


def test_one_lease_whether_a_checkpoint_is_named_by_path_or_uri(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with hold(settings, Path("ckpt"), "board-detail-join", {}):
        for name in (tmp_path / "ckpt", (tmp_path / "ckpt").as_uri(), f"{tmp_path}/ckpt/"):
            with pytest.raises(CheckpointBusyError), hold(settings, name, "other", {}):
                pass
        with hold(settings, tmp_path / "ckpt2", "board-detail-sink", {}):  # another one
            pass


@contextmanager
def holding(script: str, settings: Settings, ttl_s: float, checkpoint: Path) -> Iterator:
    """``script`` run as a holder of ``checkpoint``'s lease (TTL ``ttl_s``), once it said it
    holds it; killed afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(settings.var_dir), str(ttl_s), str(checkpoint)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "held\n"
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_holder_that_lost_its_lease_and_hangs_exits_before_a_successor_may_take_it(
    settings: Settings, tmp_path: Path
) -> None:
    """Self-fencing: the holder (which never lets go, as a hung stop would not) is gone within a
    quarter of the TTL after the loss, so no second driver writes the checkpoint."""
    with holding(HOLDER, settings, TTL_S, tmp_path / "ckpt") as process:
        store = Leases.of(settings)
        with store.engine.begin() as connection:  # its TTL ran out, as when cut off
            connection.execute(leases.update().values(expires_at_ms=0))
        assert store.try_take(lease_name(tmp_path / "ckpt"), {"pid": 7, "host": "b"}) is not None
        # It learns the loss at its next renewal (a third of the TTL), and exits at once: its
        # last renewal was before the taking, more than 11/12 of the TTL ago.
        assert process.wait(timeout=TTL_S * 2) == 1
        said = process.stderr.read()
        assert "was lost: exiting 1.83333 s after its last renewal" in said


# A holder whose renewals hang, as on a connection to a database cut off by the network.
HUNG = HOLDER.replace(
    "settings = Settings(",
    "import threading\n"
    "from boardstream.leases import Leases\n"
    "Leases.renew = lambda self, held: threading.Event().wait()\n"
    "settings = Settings(",
)


def test_a_holder_whose_renewals_hang_gives_the_lease_up_and_exits_before_it_expires(
    settings: Settings, tmp_path: Path
) -> None:
    """A renewal hung on a dead connection returns nothing, neither success nor error: the
    silence itself (two thirds of the TTL) counts the lease lost, and the process exits a
    twelfth of the TTL before the lease expires for a successor (a TTL of 6 s here: half a
    second to see it still held once the process is gone)."""
    ttl_s = 6.0
    with holding(HUNG, settings, ttl_s, tmp_path / "ckpt") as process:
        assert process.wait(timeout=ttl_s * 2) == 1
        # Gone while its lease still held: before any successor could take it.
        assert holder(settings, tmp_path / "ckpt") is not None
        said = process.stderr.read()
        assert "not renewed for" in said and "given up" in said, said
        assert "was lost: exiting 5.5 s after its last renewal" in said


# A driver that stops on losing its lease, then hangs in its shutdown (a SparkContext stopping
# across a network cut off): the lease's hold is over, the process is not.
STOPS_THEN_HANGS = HUNG.replace(
    '    print("held", flush=True)\n    time.sleep(600)',
    '    print("held", flush=True)\n    held.lost.wait(600)\ntime.sleep(600)',
).replace("exit_when_lost=True):", "exit_when_lost=True) as held:")


def test_a_driver_whose_shutdown_hangs_after_losing_its_lease_still_exits_in_time(
    settings: Settings, tmp_path: Path
) -> None:
    ttl_s = 6.0
    with holding(STOPS_THEN_HANGS, settings, ttl_s, tmp_path / "ckpt") as process:
        assert process.wait(timeout=ttl_s * 2) == 1
        assert holder(settings, tmp_path / "ckpt") is not None  # gone before it expired
        assert "was lost: exiting 5.5 s after its last renewal" in process.stderr.read()
