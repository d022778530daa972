"""One driver per checkpoint: a lease in the platform's database, held as long as a job's query
runs.

Two drivers on one checkpoint corrupt it (both write the same offset and state files, and Spark
guards only queries of one session), so a live stream and a catch-up run, or two starts racing,
must never overlap, on one host or two. The driver itself holds the lease
(:class:`boardstream.leases.Leases`, named after the checkpoint's URI): it is free when the driver
ends, or at most ``lease_ttl_s`` after the driver stopped renewing it (kill -9, its host lost or
cut off); a driver that can no longer renew it stops its query (``Held.lost``). The lease also
says who holds it (pid, host, job, Spark application, since when), for refusals, supervision and
the UI page, and who held it last, for how the query last ran.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Connection

from boardstream.errors import BoardstreamError
from boardstream.leases import WAIT_POLL_S, Held, Leases, LeaseTimeoutError
from boardstream.locations import checkpoint_uri, shown
from boardstream.settings import Settings

logger = logging.getLogger(__name__)

_held_here: dict[str, Held] = {}  # the leases this process holds, by name: for its writers
# A driver that lost its lease (given up at 2/3 of the TTL, the stop of its query bounded by
# 1/6 more: streaming.run) must be gone before the TTL lets a successor in, whatever hangs:
# once this part of the TTL has passed since its last renewal, the process exits on its own.
EXIT_BY_TTL_PART = 11 / 12
WATCH_POLL_S = 0.2


class CheckpointBusyError(BoardstreamError):
    """Another live process runs a query on this checkpoint."""


class CheckpointNotHeldError(BoardstreamError):
    """A write fenced by a checkpoint's lease, in a process that does not hold that lease: it
    cannot be fenced, so it must not run (rather than write as a driver that lost it would)."""


@dataclass(frozen=True)
class Holder:
    """Who holds a checkpoint's lease, as the holder said when it took it."""

    pid: int
    host: str
    job: str
    since_ms: int
    details: Mapping[str, Any]  # e.g. the Spark application id and master, the trigger

    def describe(self) -> str:
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.since_ms / 1000))
        app = self.details.get("application_id")
        where = f"pid {self.pid} on {self.host}" + (f", {app}" if app else "")
        return f"{self.job} ({where}, since {started})"


def lease_name(checkpoint: str | Path) -> str:
    """The lease of ``checkpoint`` (a path or URI): one name, from whichever host it is asked."""
    return f"checkpoint:{checkpoint_uri(checkpoint)}"


def _holder(said: Mapping[str, Any] | None) -> Holder | None:
    if said is None:
        return None
    return Holder(
        int(said["pid"]),
        str(said["host"]),
        str(said["job"]),
        int(said["since_ms"]),
        dict(said.get("details", {})),
    )


def holder(settings: Settings, checkpoint: str | Path) -> Holder | None:
    """The live holder of ``checkpoint``'s lease, or None when no driver holds it."""
    return _holder(Leases.of(settings).holder(lease_name(checkpoint)))


def last_holder(settings: Settings, checkpoint: str | Path) -> Holder | None:
    """Who last held ``checkpoint``'s lease, live or not; None when nobody ever has. How the
    last driver ran its query (``details``' trigger) tells what it may have left behind."""
    return _holder(Leases.of(settings).last_holder(lease_name(checkpoint)))


def live_holder(settings: Settings, checkpoint: str | Path) -> Holder | None:
    """The holder of ``checkpoint``'s lease once a dead one's would have expired: a driver
    killed a moment ago still holds it for up to the TTL, a live one beyond. None when free."""
    deadline = time.monotonic() + settings.lease_ttl_s
    while (owner := holder(settings, checkpoint)) is not None and time.monotonic() < deadline:
        time.sleep(WAIT_POLL_S)
    return owner


@contextmanager
def hold(
    settings: Settings,
    checkpoint: str | Path,
    job: str,
    details: Mapping[str, Any],
    exit_when_lost: bool = False,
) -> Iterator[Held]:
    """Hold ``checkpoint``'s lease for the duration; refused (:class:`CheckpointBusyError`,
    naming the holder) while another driver holds it, after waiting up to the TTL for one that
    died to let it go. The caller stops its query once the lease is lost (``Held.lost``).

    With ``exit_when_lost`` (a driver's main: never a process that merely runs a query in line,
    such as a test), the process ends itself (exit code 1) by 11/12 of the TTL after the last
    renewal of the lease it lost, whatever its stop, its release of the lease or its
    SparkContext's shutdown hang on (a network cut off): before the TTL lets a successor in."""
    said = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "job": job,
        "since_ms": int(time.time() * 1000),
        "details": dict(details),
    }
    if (owner := holder(settings, checkpoint)) is not None:
        logger.info(
            "checkpoint %s is held by %s: waiting up to %g s for it (a driver that died lets "
            "it go within that)",
            shown(checkpoint_uri(checkpoint)),
            owner.describe(),
            settings.lease_ttl_s,
        )
    with ExitStack() as stack:
        try:
            lease = Leases.of(settings).hold(lease_name(checkpoint), said, settings.lease_ttl_s)
            held = stack.enter_context(lease)
        except LeaseTimeoutError:
            owner = holder(settings, checkpoint)
            raise CheckpointBusyError(
                f"checkpoint {shown(checkpoint_uri(checkpoint))} is in use by "
                f"{owner.describe() if owner else 'another driver'}: one query runs on a "
                "checkpoint at a time. Stop that one first (a supervised stream: the "
                "board_detail_stream_request DAG with action=stop), or run on another "
                "checkpoint."
            ) from None
        _held_here[held.name] = held
        released = threading.Event()
        if exit_when_lost:
            threading.Thread(
                target=_exit_once_lost,
                args=(Leases.of(settings), held, released, settings.lease_ttl_s * EXIT_BY_TTL_PART),
                name=f"lease watch {job}",
                daemon=True,
            ).start()
        try:
            yield held
        finally:
            if not held.lost.is_set():
                released.set()
            del _held_here[held.name]


def _exit_once_lost(
    leases: Leases, held: Held, released: threading.Event, exit_by_s: float
) -> None:
    """Self-fencing: once ``held`` is lost (taken, or silent for two thirds of the TTL, however
    its renewals hang), end this process ``exit_by_s`` after its last renewal, still before the
    lease expires for a successor, whatever the loss took to notice and whatever the process
    is doing by then; nothing to do once the lease was let go while still held (``released``)."""
    while not released.is_set():
        if held.lost.wait(WATCH_POLL_S) or leases.silent_too_long(held):
            time.sleep(max(held.renewed_at + exit_by_s - time.monotonic(), 0.0))
            logger.error(
                "%s was lost: exiting %g s after its last renewal, so that no second driver "
                "writes its checkpoint",
                held.name,
                exit_by_s,
            )
            os._exit(1)


def ask_to_stop(settings: Settings, checkpoint: str | Path) -> bool:
    """Ask the driver holding ``checkpoint``'s lease to stop its query, wherever it runs (it
    learns so at its next renewal, within a third of the TTL); False when no driver holds it."""
    return Leases.of(settings).ask_release(lease_name(checkpoint))


def fence(settings: Settings, checkpoint: str | Path) -> Callable[[Connection], None]:
    """What a writer of ``checkpoint``'s query runs in each transaction of its writes, so that
    they commit only while this process holds the checkpoint's lease
    (:meth:`boardstream.leases.Leases.fence`). Refused (:class:`CheckpointNotHeldError`) when
    this process does not hold it: a writer outside any query (repair) names no checkpoint."""
    held = _held_here.get(lease_name(checkpoint))
    if held is None:
        raise CheckpointNotHeldError(
            f"checkpoint {shown(checkpoint_uri(checkpoint))}: this process holds no lease on "
            "it, so its query's writes cannot be fenced and are refused (a query runs under "
            "its checkpoint's lease: streaming.run with its job's config)"
        )
    leases = Leases.of(settings)
    return lambda connection: leases.fence(connection, held)
