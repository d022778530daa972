"""The supervisor with a stand-in driver (a real process that holds the lease as a job's driver
does, without Spark): started detached and once, a failed start named with its log, a
requested stop waiting for the lease to come free, a killed driver's lease free within its TTL."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import psutil
import pytest

from boardstream import supervision
from boardstream.spark.checkpoint_lease import holder
from boardstream.stack.local import LocalStack
from boardstream.supervision import register, supervisor
from boardstream.supervision.register import RUNNING, STOPPED
from boardstream.supervision.streams import StreamOptions, board_detail_streams
from tests.fixtures import isolated_settings

# What a stream's driver does, in the part the supervisor sees: print, take its checkpoint's
# lease, run until asked to stop (through the lease, or SIGTERM), then let go, as streaming.run
# stops the query between batches. argv[3], when given, is the host it says it runs on.
DRIVER = """
import signal, socket, sys, time
from pathlib import Path
from boardstream.settings import Settings
from boardstream.spark.checkpoint_lease import hold
if len(sys.argv) > 3:
    socket.gethostname = lambda: sys.argv[3]
print("driver starting", flush=True)
time.sleep(float(sys.argv[2]))
with hold(Settings(), sys.argv[1], "board-detail-sink", {"application_id": "app-1"}) as held:
    signal.signal(signal.SIGTERM, lambda *_: held.release_asked.set())
    held.release_asked.wait(600)
"""
# A driver deaf to being asked: stuck in a batch that cannot end (its broker gone, say), with a
# process of its session beside it, as spark-submit's JVM is beside the Python driver; the
# child's pid goes to the checkpoint's path (argv[1], a URI) with ".child" added.
DEAF = DRIVER.replace(
    "held.release_asked.wait(600)",
    "import subprocess; child = subprocess.Popen(['sleep', '600']); "
    "from urllib.parse import urlsplit; pid = Path(urlsplit(sys.argv[1]).path + '.child'); "
    "pid.parent.mkdir(parents=True, exist_ok=True); "
    "pid.write_text(str(child.pid)); time.sleep(600)",
)
FAILING = "import sys; print('bad settings: no broker', flush=True); sys.exit(2)"


@pytest.fixture
def stand_in(monkeypatch, tmp_path) -> Iterator[SimpleNamespace]:
    """The stream and settings, the supervisor's spark-submit replaced by ``python -c script``
    (the driver above unless a test sets another), and the commands it was given."""
    settings = isolated_settings(tmp_path, lease_ttl_s=2)  # the driver's too: its environment
    _, stream = board_detail_streams(settings, StreamOptions())  # the sink, as supervised
    ns = SimpleNamespace(settings=settings, stream=stream, commands=[], script=DRIVER, host=[])

    def command(_settings, job, args, conf):
        assert (job, args, conf) == (stream.job, list(stream.args), {"spark.cores.max": "1"})
        argv = [sys.executable, "-c", ns.script, str(stream.checkpoint), "0.5", *ns.host]
        ns.commands.append(argv)
        return argv

    monkeypatch.setattr(supervisor, "submit_command", command)
    yield ns
    if (owner := holder(settings, stream.checkpoint)) is not None:
        supervisor.kill_driver(owner.pid)  # and the child a deaf one made


def test_a_stream_starts_detached_once_and_stops_on_request(stand_in) -> None:
    settings, stream, commands = stand_in.settings, stand_in.stream, stand_in.commands
    results: list[supervisor.StreamStatus] = []
    racers = [
        threading.Thread(target=lambda: results.append(supervisor.ensure_running(settings, stream)))
        for _ in range(2)
    ]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(60)
    assert len(commands) == 1, "two drivers started"
    first, second = results
    assert first.holder == second.holder and first.holder is not None
    assert first.holder.details == {"application_id": "app-1"}
    assert os.getsid(first.holder.pid) != os.getsid(0), "the driver shares our session"
    record = register.read(settings, stream.job)
    assert [(s.pid, s.restart) for s in record.starts] == [(first.holder.pid, False)]
    assert register.log_file(settings, stream.job).read_text() == "driver starting\n"

    stopped = supervisor.stop(settings, stream)
    assert not stopped.running and holder(settings, stream.checkpoint) is None
    assert stopped.record.desired == STOPPED and stopped.record.stop_requested_ms is not None


def test_a_driver_that_dies_is_restarted_and_counted(stand_in) -> None:
    settings, stream = stand_in.settings, stand_in.stream
    first = supervisor.ensure_running(settings, stream).holder
    assert first is not None
    os.kill(first.pid, signal.SIGKILL)
    killed = time.monotonic()
    assert supervisor.ensure_running(settings, stream).holder == first  # not yet: its TTL runs
    while holder(settings, stream.checkpoint) is not None:
        time.sleep(0.1)
    assert time.monotonic() - killed >= 2 * 2 / 3  # renewed every third of the TTL at most
    again = supervisor.ensure_running(settings, stream)
    assert again.holder is not None and again.holder.pid != first.pid
    assert again.record.restarts == 1


def test_a_driver_that_exits_before_its_query_is_an_error_with_its_log(stand_in) -> None:
    settings, stream = stand_in.settings, stand_in.stream
    stand_in.script = FAILING
    with pytest.raises(supervisor.StreamStartError) as refused:
        supervisor.ensure_running(settings, stream)
    assert str(refused.value) == (
        f"board-detail-sink exited (code 2) before its query started; last lines of "
        f"{register.log_file(settings, stream.job)}:\nbad settings: no broker"
    )
    assert register.read(settings, stream.job).starts == ()


def test_a_stream_that_cannot_start_is_tried_again_after_a_growing_backoff(
    stand_in, monkeypatch
) -> None:
    settings, stream = stand_in.settings, stand_in.stream
    join, _ = board_detail_streams(settings, StreamOptions())
    supervisor.request(settings, join, STOPPED)  # this test supervises the sink alone
    waits: list[float] = []
    clock = SimpleNamespace(time=time.time, sleep=waits.append)  # the backoff, not waited
    monkeypatch.setattr(supervision, "time", clock)
    stand_in.script = FAILING
    for attempt in (1, 2):
        with pytest.raises(supervisor.StreamStartError, match=r"exited \(code 2\)"):
            supervision.ensure(settings)
        failed = register.read(settings, stream.job).failed
        assert failed is not None and failed.count == attempt
        assert failed.reason == (
            "board-detail-sink exited (code 2) before its query started; last lines of "
            f"{register.log_file(settings, stream.job)}:"
        )
    # No wait before the first try, 15 s (less the time since the first failure) before the
    # second, 30 s before the third.
    assert len(waits) == 1 and 14 < waits[0] <= 15
    assert 29 < supervisor.retry_in_s(register.read(settings, stream.job), _now_ms()) <= 30
    stand_in.script = DRIVER
    (_, sink) = supervision.ensure(settings)
    assert sink.running and len(waits) == 2 and 29 < waits[1] <= 30
    assert register.read(settings, stream.job).failed is None  # a start clears the count
    assert len(stand_in.commands) == 3


def test_the_backoff_doubles_up_to_its_bound() -> None:
    def after(count: int) -> float:
        failed = register.StreamRecord().failed_start(0, "x")
        for _ in range(count - 1):
            failed = failed.failed_start(0, "x")
        return supervisor.retry_in_s(failed, 0)

    assert [after(n) for n in (1, 2, 3, 6, 7, 20)] == [15, 30, 60, 480, 600, 600]
    assert supervisor.retry_in_s(register.StreamRecord(), 0) == 0


def _now_ms() -> int:
    return int(time.time() * 1000)


def test_a_driver_that_never_takes_its_lease_is_stopped_at_the_timeout(stand_in) -> None:
    settings, stream = stand_in.settings, stand_in.stream
    stand_in.script = "import time; time.sleep(600)"
    with pytest.raises(supervisor.StreamStartError, match=r"did not start its query within 2s"):
        supervisor.ensure_running(settings, stream, timeout_s=2)


def test_down_stops_the_drivers_it_finds_and_keeps_them_wanted(stand_in) -> None:
    """A detached driver outlives its services' stop unless ``stack down`` stops it; what the
    stream wants stays, so the supervisor resumes it after the next ``up``."""
    settings, stream = stand_in.settings, stand_in.stream
    supervisor.request(settings, stream, RUNNING)
    first = supervisor.ensure_running(settings, stream).holder
    assert first is not None
    assert LocalStack(settings).down() == [f"board-detail-sink stopped (pid {first.pid})"]
    assert holder(settings, stream.checkpoint) is None
    assert register.read(settings, stream.job).desired == RUNNING
    assert supervisor.ensure_running(settings, stream).running


def test_a_driver_deaf_to_a_stop_is_an_error_to_a_stop_and_killed_by_a_halt(stand_in) -> None:
    settings, stream = stand_in.settings, stand_in.stream
    stand_in.script = DEAF
    owner = supervisor.ensure_running(settings, stream).holder
    assert owner is not None
    with pytest.raises(supervisor.StreamStopError, match=r"did not stop within 1s of being asked"):
        supervisor.stop(settings, stream, timeout_s=1)
    assert holder(settings, stream.checkpoint) == owner
    child = int(Path(f"{urlsplit(str(stream.checkpoint)).path}.child").read_text())
    assert supervision.halt(settings, timeout_s=1) == [
        f"board-detail-sink stopped (pid {owner.pid})"
    ]
    assert holder(settings, stream.checkpoint) is None
    deadline = time.monotonic() + 10  # killed with the driver: its session goes down together
    while psutil.pid_exists(child) and psutil.Process(child).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, f"pid {child} of the driver's session still runs"
        time.sleep(0.1)


def test_a_driver_on_another_host_stops_when_asked_and_is_left_to_its_hosts_down(stand_in) -> None:
    """No pid reaches a driver on another host: the stop goes through its lease. ``stack down``
    here stops only this host's drivers."""
    settings, stream = stand_in.settings, stand_in.stream
    stand_in.host = ["elsewhere"]
    owner = supervisor.ensure_running(settings, stream).holder
    assert owner is not None and owner.host == "elsewhere"
    assert supervision.halt(settings, timeout_s=1) == []
    assert holder(settings, stream.checkpoint) == owner
    asked = time.monotonic()
    stopped = supervisor.stop(settings, stream)
    assert not stopped.running and stopped.record.desired == STOPPED
    assert time.monotonic() - asked < 2 * 2 / 3 + 1  # its next renewal, a third of the TTL


def test_a_deaf_driver_on_another_host_is_not_killed_from_here(stand_in) -> None:
    settings, stream = stand_in.settings, stand_in.stream
    stand_in.script, stand_in.host = DEAF, ["elsewhere"]
    owner = supervisor.ensure_running(settings, stream).holder
    assert owner is not None
    with pytest.raises(supervisor.StreamStopError, match="it runs on elsewhere: kill it there"):
        supervisor.halt(settings, stream, timeout_s=1, then_kill=True)
    assert holder(settings, stream.checkpoint) == owner  # still running: nothing killed
