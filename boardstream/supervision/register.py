"""What the supervisor remembers of each stream between its runs: whether it is wanted running
(a stop on request must outlast the supervising DAG's next run) and when it was started, and
whether each start was a restart (its previous run ended without being asked to).

One JSON file per stream under ``var/streams/``, changed only under that stream's start lock, so
two supervisors never start one stream twice or lose each other's records.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from boardstream.settings import Settings

RUNNING, STOPPED = "running", "stopped"
KEPT_STARTS = 100  # the newest starts kept per stream


@dataclass(frozen=True)
class Start:
    at_ms: int
    restart: bool  # its previous run ended without a stop request
    pid: int


@dataclass(frozen=True)
class StreamRecord:
    desired: str = RUNNING
    starts: tuple[Start, ...] = ()
    stop_requested_ms: int | None = None  # the newest stop request

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
        return replace(self, desired=RUNNING, starts=(*self.starts, start)[-KEPT_STARTS:])


def directory(settings: Settings) -> Path:
    return settings.var_dir / "streams"


def log_file(settings: Settings, job: str) -> Path:
    """Where a supervised stream's driver writes its output (appended across restarts)."""
    return directory(settings) / f"{job}.log"


def read(settings: Settings, job: str) -> StreamRecord:
    path = directory(settings) / f"{job}.json"
    if not path.exists():
        return StreamRecord()
    record = json.loads(path.read_text())
    return StreamRecord(
        record["desired"],
        tuple(Start(**start) for start in record["starts"]),
        record.get("stop_requested_ms"),
    )


def write(settings: Settings, job: str, record: StreamRecord) -> None:
    path = directory(settings) / f"{job}.json"
    staged = path.with_suffix(".json.tmp")
    staged.write_text(json.dumps(asdict(record), indent=1) + "\n")
    staged.replace(path)  # readers never see half a file


@contextmanager
def locked(settings: Settings, job: str) -> Iterator[None]:
    """Hold ``job``'s start lock: one supervisor at a time decides about that stream."""
    directory(settings).mkdir(parents=True, exist_ok=True)
    with (directory(settings) / f"{job}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
