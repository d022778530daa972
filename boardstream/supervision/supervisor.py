"""Keep a stream's Spark application running, detached from whoever asked for it.

A stream's driver is a ``spark-submit`` started in a session of its own, so it outlives the
Airflow task or command that started it (standalone Spark runs Python drivers in client mode
only, and has no ``--supervise`` for them). Its checkpoint lease (:mod:`boardstream.spark.
checkpoint_lease`) is the one truth about whether it runs: the driver holds it for as long as its
query lives, and it is free again at most the lease's TTL after the driver dies, however it dies,
or loses its host. Starting is idempotent and serialised per stream (the register's lock);
stopping asks the driver through its lease to stop after its current batch, from whichever host
the stop is asked, and waits for the lease to come free.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import time
from dataclasses import dataclass, replace

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.spark import standalone
from boardstream.spark.checkpoint_lease import Holder, ask_to_stop, holder
from boardstream.spark.submit import submit_command, submit_env
from boardstream.stack.ports import env_var
from boardstream.stack.processes import ManagedProcess, log_tail, session_members
from boardstream.supervision import register
from boardstream.supervision.register import RUNNING, STOPPED
from boardstream.supervision.streams import Stream

logger = logging.getLogger(__name__)

POLL_S = 0.5
# A stream that cannot be started (no free cores, a driver that exits at once) is tried again by
# the supervisor after 15 s, then 30 s, 60 s, ... at most every 10 minutes, not in a tight loop.
START_BACKOFF_S = 15.0
START_BACKOFF_MAX_S = 600.0


class StreamStartError(BoardstreamError):
    """A stream's driver ended, or took too long, before its query held its checkpoint."""


class StreamStopError(BoardstreamError):
    """A stream's driver did not stop in time, or runs where this process cannot signal it."""


@dataclass(frozen=True)
class StreamStatus:
    job: str
    holder: Holder | None  # the live driver, None when it does not run
    record: register.StreamRecord

    @property
    def running(self) -> bool:
        return self.holder is not None


def status(settings: Settings, stream: Stream) -> StreamStatus:
    return StreamStatus(
        stream.job, holder(settings, stream.checkpoint), register.read(settings, stream.job)
    )


def ensure_running(settings: Settings, stream: Stream, timeout_s: float = 300.0) -> StreamStatus:
    """Start ``stream`` unless a live driver already holds its checkpoint; wait until the new
    driver's query holds it. Safe to call from two places at once: one stream results."""
    with register.locked(settings, stream.job):
        current = status(settings, stream)
        if current.running:
            return current
        try:
            return _start(settings, stream, current, timeout_s)
        except StreamStartError as error:
            failed = current.record.failed_start(_now_ms(), str(error).splitlines()[0])
            register.write(settings, stream.job, failed)
            raise


def retry_in_s(record: register.StreamRecord, now_ms: int) -> float:
    """How long a supervisor waits before it starts a stream whose last starts failed: from
    :data:`START_BACKOFF_S` after the first failure, twice as long after each next one, at most
    :data:`START_BACKOFF_MAX_S`; 0 when its last start did not fail."""
    if record.failed is None:
        return 0.0
    backoff_s = min(START_BACKOFF_S * 2 ** (record.failed.count - 1), START_BACKOFF_MAX_S)
    return max(0.0, record.failed.last_ms / 1000 + backoff_s - now_ms / 1000)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _start(
    settings: Settings, stream: Stream, current: StreamStatus, timeout_s: float
) -> StreamStatus:
    """Start ``stream``'s driver (under its register lock) and wait until its query holds the
    checkpoint."""
    _require_cores(settings, stream)
    log = register.log_file(settings, stream.job)
    process = ManagedProcess(
        stream.job, register.directory(settings) / f"{stream.job}.pid", stream.job
    ).start(
        submit_command(settings, stream.job, list(stream.args), stream.conf()),
        log,
        # The driver reads its settings from its environment: these settings, whole.
        {**settings.to_env(), **submit_env(settings)},
    )
    deadline = time.monotonic() + timeout_s
    while (owner := holder(settings, stream.checkpoint)) is None:
        if process.poll() is not None:
            raise StreamStartError(
                f"{stream.job} exited (code {process.returncode}) before its query started; "
                f"last lines of {log}:\n{log_tail(log)}"
            )
        if time.monotonic() > deadline:
            process.send_signal(signal.SIGTERM)
            raise StreamStartError(
                f"{stream.job} did not start its query within {timeout_s:g}s (stopped); "
                f"see {log}:\n{log_tail(log)}"
            )
        time.sleep(POLL_S)
    record = current.record.started(owner.since_ms, owner.pid)
    register.write(settings, stream.job, record)
    logger.info(
        "%s %s: %s",
        stream.job,
        "restarted" if record.starts[-1].restart else "started",
        owner.describe(),
    )
    return StreamStatus(stream.job, owner, record)


def _require_cores(settings: Settings, stream: Stream) -> None:
    """Refuse ``stream`` when its standalone cluster has fewer cores free than it takes: it
    would wait with none, alive and loading nothing. Local mode, or a master whose web UI does
    not answer here, is not checked (said at INFO)."""
    cores = standalone.free_cores(settings)
    if cores is None:
        logger.info(
            "%s: cores not checked (%s is local mode, or its master's web UI on port %s does "
            "not answer)",
            stream.job,
            settings.spark_master,
            settings.spark_master_ui_port,
        )
        return
    if cores.free < stream.cores:
        raise StreamStartError(
            f"{stream.job} takes {stream.cores} cores ({stream.cores_setting}) and the Spark "
            f"cluster at {settings.spark_master} has {cores.describe()}: it would wait with "
            "none and load nothing. Give the cluster more (the local stack's worker: "
            f"{env_var('spark_worker_cores')}, then stack down and up --spark-cluster) or the "
            f"stream fewer ({stream.cores_setting})"
        )


def request(settings: Settings, stream: Stream, desired: str) -> None:
    """Record whether ``stream`` is wanted running; a supervisor respects it on its next run."""
    if desired not in (RUNNING, STOPPED):
        raise ValueError(f"desired is {RUNNING!r} or {STOPPED!r}, got {desired!r}")
    with register.locked(settings, stream.job):
        record = register.read(settings, stream.job)
        stop_ms = int(time.time() * 1000) if desired == STOPPED else record.stop_requested_ms
        register.write(
            settings, stream.job, replace(record, desired=desired, stop_requested_ms=stop_ms)
        )


def stop(settings: Settings, stream: Stream, timeout_s: float = 120.0) -> StreamStatus:
    """Ask ``stream``'s driver to stop after its current batch (SIGTERM) and wait until its
    lease is free; the stream stays stopped until it is started again on request."""
    request(settings, stream, STOPPED)
    owner = halt(settings, stream, timeout_s)
    if owner is not None:
        logger.info("%s stopped on request: %s", stream.job, owner.describe())
    return status(settings, stream)


def halt(
    settings: Settings, stream: Stream, timeout_s: float = 120.0, then_kill: bool = False
) -> Holder | None:
    """Ask ``stream``'s driver, wherever it runs, to stop its query after the current batch
    (through its checkpoint's lease: it learns so within a third of the TTL) and wait until its
    lease is free; what it wants is left as it is. The driver that held the lease, or None when
    none did. Past ``timeout_s`` it is an error, or with ``then_kill`` a SIGKILL of a driver on
    this host (its checkpoint is as safe as after any crash: the next start resumes from it);
    one on another host can only be killed there."""
    owner = holder(settings, stream.checkpoint)
    if owner is None or not ask_to_stop(settings, stream.checkpoint):
        return None
    deadline, killed = time.monotonic() + timeout_s + settings.lease_ttl_s / 3, False
    while holder(settings, stream.checkpoint) is not None:
        if time.monotonic() > deadline:
            if killed or not then_kill or not runs_here(owner):
                raise StreamStopError(
                    f"{stream.job} did not stop within {timeout_s:g}s of being asked"
                    + (" nor its lease expire after a SIGKILL" if killed else "")
                    + f": {owner.describe()}"
                    + ("" if runs_here(owner) else f"; it runs on {owner.host}: kill it there")
                    + f"; see its log on {owner.host} ({register.log_file(settings, stream.job)})"
                )
            logger.warning(
                "%s did not stop within %g s of being asked: killed (%s)",
                stream.job,
                timeout_s,
                owner.describe(),
            )
            kill_driver(owner.pid)
            killed = True  # its lease is free once its TTL has run out
            deadline = time.monotonic() + settings.lease_ttl_s + timeout_s
        time.sleep(POLL_S)
    return owner


def kill_driver(pid: int) -> None:
    """SIGKILL the driver ``pid`` names and every process of its session: the lease names the
    Python driver, while the writes come from the spark-submit JVM that started it (and, in
    local mode, its executors' threads), which a kill of the Python process alone left running.
    A driver in this process's own session (run in line) is killed alone."""
    try:
        session = os.getsid(pid)
    except ProcessLookupError:
        return
    members = [pid] if session == os.getsid(0) else session_members(session) or [pid]
    for member in members:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGKILL)


def runs_here(owner: Holder) -> bool:
    """Whether ``owner``'s driver runs on this host (its pid means something here)."""
    return owner.host == socket.gethostname()
