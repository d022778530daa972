"""What the cluster's scenarios share: a pipeline of their own on the cluster, the supervision run
on a host, and waiting for the pipeline to catch up."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.exc import ProgrammingError

from boardstream.spark.checkpoint_lease import Holder, holder
from boardstream.supervision.streams import StreamOptions, board_detail_streams
from tests.faults.cluster.cluster import Cluster
from tests.faults.harness import Scenario

SEED = 5050
JOBS = ("board-detail-join", "board-detail-sink")
# The stream's part of a scenario's settings: what the supervision on a host must be told.
STREAM_SETTINGS = (
    "database_url",
    "checkpoint_root",
    "member_topic",
    "board_topic",
    "board_detail_topic",
    "unmatched_topic",
    "dlq_topic",
)


def scenario(cluster: Cluster, name: str, tmp_path: Path) -> Scenario:
    """A scenario on the cluster: topics of its own (3 replicas), a database of its own on the
    cluster's PostgreSQL, checkpoints of its own on HDFS."""
    database_url = cluster.new_database()
    own = database_url.rsplit("/", 1)[1]  # a checkpoint belongs to its database's pipeline
    return Scenario(
        name,
        cluster.settings(),
        database_url,
        tmp_path,
        SEED,
        overrides={"checkpoint_root": f"{cluster.hdfs}/scenarios/{own}/checkpoints"},
    )


def stream_env(s: Scenario) -> dict[str, str]:
    return {f"BOARDSTREAM_{n.upper()}": str(getattr(s.settings, n)) for n in STREAM_SETTINGS}


SUPERVISE = """
import json, sys
from boardstream import supervision
from boardstream.settings import Settings
statuses = getattr(supervision, sys.argv[1])(Settings())
print(json.dumps([[s.job, s.holder.host if s.holder else None] for s in statuses]))
"""


def supervise(cluster: Cluster, host: str, s: Scenario, action: str) -> dict[str, str | None]:
    """The supervision's ``action`` (start, ensure, stop) run on ``host``: each stream's host."""
    out = cluster.python(host, SUPERVISE, stream_env(s), action)
    return dict(json.loads(out.strip().splitlines()[-1]))


def until(done: Callable[[], bool], what: str, timeout_s: float = 300) -> float:
    started = time.monotonic()
    while not done():
        assert time.monotonic() - started < timeout_s, f"not {what} within {timeout_s:g} s"
        time.sleep(1)
    return time.monotonic() - started


def loaded(s: Scenario) -> Callable[[], bool]:
    """Whether every board of ``s`` is in board_detail (not yet, before the sink made it)."""

    def check() -> bool:
        try:
            return set(s.table_counts()) == s.boards
        except ProgrammingError:  # no board_detail yet: the sink's first batch makes it
            return False

    return check


def host_of(holder_host: str) -> str:
    """The cluster's name of the host a lease's holder names (``bsh-driver-1``: driver-1)."""
    return holder_host.split("-", 1)[1]


def streams_running(s: Scenario, away_from: str | None = None) -> list[Holder]:
    """Both streams' drivers once both run (on a host other than ``away_from``)."""
    settings = s.settings
    drivers: list[Holder] = []

    def running() -> bool:
        drivers[:] = [
            h
            for stream in board_detail_streams(settings, StreamOptions())
            if (h := holder(settings, stream.checkpoint)) is not None and h.host != away_from
        ]
        return len(drivers) == 2

    until(running, "both streams running" + (f" off {away_from}" if away_from else ""), 900)
    return drivers
