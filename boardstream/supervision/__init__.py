"""Live streams: the join and the sink kept running as long-lived Spark applications.

The front door, for the CLI, the supervising DAG and the tests alike: :func:`ensure` (each
stream wanted running runs), :func:`start` and :func:`stop` (requests that last), :func:`halt`
(the drivers stopped, what is wanted kept) and :func:`health` (each stream against its SLO). A
stream's checkpoint lease says whether it runs; the register remembers what was asked of it
(:mod:`.register`).
"""

from __future__ import annotations

import logging
import time

from boardstream.settings import Settings
from boardstream.spark import standalone
from boardstream.spark.slo import StreamSlo
from boardstream.stream_progress import ProgressStore
from boardstream.supervision import health as _health
from boardstream.supervision import supervisor
from boardstream.supervision.health import StreamHealth
from boardstream.supervision.lag import committed_offsets, source_lag
from boardstream.supervision.register import RUNNING
from boardstream.supervision.streams import StreamOptions, board_detail_streams
from boardstream.supervision.supervisor import StreamStatus

logger = logging.getLogger(__name__)

__all__ = ["StreamHealth", "StreamOptions", "StreamSlo", "StreamStatus"]


def ensure(settings: Settings, options: StreamOptions | None = None) -> list[StreamStatus]:
    """Start each stream that is wanted running and does not run (a restart after a crash);
    leave the ones stopped on request stopped. A stream whose last starts failed is started
    again only once its backoff has passed (:func:`supervisor.retry_in_s`), waited here: a
    supervisor run every moment (Airflow's ``@continuous``) would otherwise fail in a loop."""
    statuses = []
    for stream in board_detail_streams(settings, options or StreamOptions()):
        current = supervisor.status(settings, stream)
        if current.record.desired == RUNNING and not current.running:
            failed = current.record.failed
            wait_s = supervisor.retry_in_s(current.record, int(time.time() * 1000))
            if failed is not None and wait_s > 0:
                logger.info(
                    "%s: its last %d start(s) failed (%s); trying again in %.0f s",
                    stream.job,
                    failed.count,
                    failed.reason,
                    wait_s,
                )
                time.sleep(wait_s)
            current = supervisor.ensure_running(settings, stream)
        statuses.append(current)
    return statuses


def start(settings: Settings, options: StreamOptions | None = None) -> list[StreamStatus]:
    """Want the streams running from now on, and start the ones that do not run."""
    streams = board_detail_streams(settings, options or StreamOptions())
    for stream in streams:
        supervisor.request(settings, stream, RUNNING)
    return [supervisor.ensure_running(settings, stream) for stream in streams]


def stop(settings: Settings) -> list[StreamStatus]:
    """Stop the streams after their current batch, the join first (so the sink is still there
    to load what it wrote last), and keep them stopped until started on request."""
    return [
        supervisor.stop(settings, stream)
        for stream in board_detail_streams(settings, StreamOptions())
    ]


def halt(settings: Settings, timeout_s: float = 60.0) -> list[str]:
    """Stop the drivers running on this host, the join first, as a stop does, killing one still
    running after ``timeout_s``; what each stream wants is left as it is, so a supervisor
    resumes the wanted ones from their checkpoints. For ``stack down``: a detached driver
    outlives whatever started it, and would be left behind without its services. A driver on
    another host is that host's to stop."""
    lines = []
    for stream in board_detail_streams(settings, StreamOptions()):
        current = supervisor.status(settings, stream).holder
        if current is None or not supervisor.runs_here(current):
            continue
        owner = supervisor.halt(settings, stream, timeout_s, then_kill=True)
        if owner is not None:
            lines.append(f"{stream.job} stopped (pid {owner.pid})")
    return lines


def health(settings: Settings, now_ms: int | None = None) -> list[StreamHealth]:
    """Each stream against the settings' SLO."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    slo = StreamSlo.from_settings(settings)
    cluster = standalone.state_of(settings)
    store = ProgressStore(settings.database)
    verdicts = []
    for stream in board_detail_streams(settings, StreamOptions()):
        newest = store.read(stream.job, last=1)
        status = supervisor.status(settings, stream)
        app = status.holder.details.get("application_id") if status.holder else None
        verdicts.append(
            _health.evaluate(
                status,
                newest[0] if newest else None,
                store.idle_since(stream.job),
                now_ms,
                slo,
                standalone.granted_cores(cluster, app) if cluster and app else None,
                source_lag(settings, stream.job, committed_offsets(newest), stream.sources)
                if status.holder
                else None,
            )
        )
    return verdicts
