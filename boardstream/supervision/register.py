"""What the supervisor remembers of each stream between its runs: whether it is wanted running
(a stop on request must outlast the supervising DAG's next run) and when it was started, and
whether each start was a restart (its previous run ended without being asked to).

A row per stream in the database's ``stream_register`` (which every host reads), changed only
under that stream's start lease (:mod:`boardstream.leases`), so two supervisors, on one host or
two, never start one stream twice or lose each other's records.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from boardstream.database import engine_with, upsert_insert
from boardstream.leases import Leases
from boardstream.settings import Settings

RUNNING, STOPPED = "running", "stopped"
KEPT_STARTS = 100  # the newest starts kept per stream
# How long a supervisor waits for another's decision about a stream: a driver's start takes up
# to the supervisor's 300 s.
START_WAIT_S = 600.0

metadata = sa.MetaData()

stream_register = sa.Table(
    "stream_register",
    metadata,
    sa.Column("job", sa.String(200), primary_key=True),
    sa.Column("desired", sa.String(20), nullable=False),
    sa.Column("starts", sa.Text, nullable=False),  # JSON: the newest KEPT_STARTS starts
    sa.Column("stop_requested_ms", sa.BigInteger),
    sa.Column("failed_starts", sa.Text),  # JSON: FailedStarts since the last start, or NULL
)


@dataclass(frozen=True)
class Start:
    at_ms: int
    restart: bool  # its previous run ended without a stop request
    pid: int


@dataclass(frozen=True)
class FailedStarts:
    """The starts that failed in a row since the stream last started, and why the last did."""

    count: int
    last_ms: int
    reason: str  # the first line of the last one's error


@dataclass(frozen=True)
class StreamRecord:
    desired: str = RUNNING
    starts: tuple[Start, ...] = ()
    stop_requested_ms: int | None = None  # the newest stop request
    failed: FailedStarts | None = None

    def failed_start(self, at_ms: int, reason: str) -> StreamRecord:
        """This record with one more failed start, at ``at_ms``."""
        count = self.failed.count + 1 if self.failed else 1
        return replace(self, failed=FailedStarts(count, at_ms, reason))

    @property
    def restarts(self) -> int:
        return sum(start.restart for start in self.starts)

    def started(self, at_ms: int, pid: int) -> StreamRecord:
        """This record with a start at ``at_ms``: a restart unless it is the first, or the
        previous run was stopped on request."""
        previous = self.starts[-1].at_ms if self.starts else None
        stopped = self.stop_requested_ms is not None and (
            previous is None or self.stop_requested_ms >= previous
        )
        start = Start(at_ms, previous is not None and not stopped, pid)
        starts = (*self.starts, start)[-KEPT_STARTS:]
        return replace(self, desired=RUNNING, starts=starts, failed=None)


def directory(settings: Settings) -> Path:
    """Where this host keeps its drivers' pid files and output."""
    return settings.var_dir / "streams"


def log_file(settings: Settings, job: str) -> Path:
    """Where a supervised stream's driver writes its output (appended across restarts)."""
    return directory(settings) / f"{job}.log"


def _store(settings: Settings) -> Engine:
    return engine_with(settings.database, metadata)


def read(settings: Settings, job: str) -> StreamRecord:
    select = sa.select(stream_register).where(stream_register.c.job == job)
    with _store(settings).connect() as connection:
        row = connection.execute(select).mappings().first()
    if row is None:
        return StreamRecord()
    failed = row["failed_starts"]
    return StreamRecord(
        row["desired"],
        tuple(Start(**start) for start in json.loads(row["starts"])),
        row["stop_requested_ms"],
        FailedStarts(**json.loads(failed)) if failed else None,
    )


def write(settings: Settings, job: str, record: StreamRecord) -> None:
    values = {
        "desired": record.desired,
        "starts": json.dumps([asdict(start) for start in record.starts]),
        "stop_requested_ms": record.stop_requested_ms,
        "failed_starts": json.dumps(asdict(record.failed)) if record.failed else None,
    }
    with _store(settings).begin() as connection:
        insert = upsert_insert(connection.dialect, stream_register, "the stream register")
        connection.execute(
            insert.values(job=job, **values).on_conflict_do_update(
                index_elements=["job"], set_=values
            )
        )


@contextmanager
def locked(settings: Settings, job: str) -> Iterator[None]:
    """Hold ``job``'s start lease: one supervisor at a time, on any host, decides about that
    stream (waiting for another's decision, a driver's start included, up to ``START_WAIT_S``)."""
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "since_ms": int(time.time() * 1000)}
    with Leases.of(settings).hold(f"stream-start:{job}", holder, START_WAIT_S):
        yield
