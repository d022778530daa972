"""One driver per checkpoint: a lease held for as long as a job's query runs.

Two drivers on one checkpoint corrupt it (both write the same offset and state files, and Spark
guards only queries of one session), so a live stream and a catch-up run, or two starts racing,
must never overlap. The lease is an exclusive ``flock`` on a file beside the checkpoint
(``<checkpoint>.lease``: inside, it would create the checkpoint of a run that is then refused
before it starts), taken by the driver process itself: the kernel releases it when that
process ends in any way, kill -9 included, so a dead driver never leaves a stale lease behind.
The file also says who holds it (pid, host, job, Spark application, since when), for refusals,
supervision and the UI page.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from boardstream.errors import BoardstreamError

LEASE_SUFFIX = ".lease"


class CheckpointBusyError(BoardstreamError):
    """Another live process runs a query on this checkpoint."""


@dataclass(frozen=True)
class Holder:
    """Who holds a checkpoint's lease, as the holder wrote it."""

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


def lease_path(checkpoint: Path) -> Path:
    """The lease file of ``checkpoint``; never removed (a process may hold the inode a removal
    would leave behind while another creates a new file: two holders)."""
    return checkpoint.with_name(checkpoint.name + LEASE_SUFFIX)


def _try_lock(handle: IO[str]) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def holder(checkpoint: Path) -> Holder | None:
    """The live holder of ``checkpoint``'s lease, or None when no process holds it."""
    path = lease_path(checkpoint)
    if not path.exists():
        return None
    with path.open("r") as handle:
        if _try_lock(handle):  # nobody holds it: what the file says is history
            fcntl.flock(handle, fcntl.LOCK_UN)
            return None
        return _read(handle)


def last_holder(checkpoint: Path) -> Holder | None:
    """Who last held ``checkpoint``'s lease, live or not (the file outlives its holder), as
    that holder wrote it; None when nobody ever has. How the last driver ran its query
    (``details``' trigger) tells what it may have left behind."""
    path = lease_path(checkpoint)
    if not path.exists():
        return None
    with path.open("r") as handle:
        return _read(handle)


def _read(handle: IO[str]) -> Holder:
    handle.seek(0)
    text = handle.read()
    try:
        record = json.loads(text)
        return Holder(
            int(record["pid"]),
            str(record["host"]),
            str(record["job"]),
            int(record["since_ms"]),
            dict(record.get("details", {})),
        )
    except (ValueError, KeyError, TypeError):  # held, but its owner has not written it yet
        return Holder(-1, "?", "?", 0, {"lease_file": text[:200]})


@contextmanager
def hold(checkpoint: Path, job: str, details: Mapping[str, Any]) -> Iterator[Holder]:
    """Hold ``checkpoint``'s lease for the duration; refused (:class:`CheckpointBusyError`,
    naming the holder) while another process holds it."""
    path = lease_path(checkpoint)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Opened without truncating: the holder's record must stay readable until we own the lock.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    with os.fdopen(fd, "r+") as handle:
        if not _try_lock(handle):
            owner = _read(handle)
            raise CheckpointBusyError(
                f"checkpoint {checkpoint} is in use by {owner.describe()}: one query runs on a "
                "checkpoint at a time. Stop that one first (a supervised stream: the "
                "board_detail_stream_request DAG with action=stop), or run on another "
                "checkpoint."
            )
        mine = Holder(os.getpid(), socket.gethostname(), job, int(time.time() * 1000), details)
        handle.seek(0)
        handle.truncate()
        handle.write(
            json.dumps(
                {
                    "pid": mine.pid,
                    "host": mine.host,
                    "job": mine.job,
                    "since_ms": mine.since_ms,
                    "details": dict(details),
                }
            )
        )
        handle.flush()
        try:
            yield mine
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
