"""A deferrable sensor over the live streams: it fails, visibly, when one is unhealthy."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseSensorOperator

from boardstream_airflow.triggers.stream_watch import UNHEALTHY, StreamWatchTrigger


class StreamUnhealthyError(Exception):
    """A live stream broke its SLO or stopped without being asked to."""


class StreamWatchSensor(BaseSensorOperator):
    """Defers at once to :class:`StreamWatchTrigger`; succeeds when what is wanted of the
    streams changes (the supervising DAG's next run acts on it), fails when one is unhealthy
    (and that next run restarts it)."""

    def __init__(self, *, poll_s: float = 5.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.poll_s = poll_s

    def execute(self, context: Any) -> None:
        from boardstream import supervision
        from boardstream.settings import Settings
        from boardstream_airflow.streams import watched

        settings = Settings()
        wanted = all(v.wanted for v in supervision.health(settings))
        self.defer(
            trigger=StreamWatchTrigger(wanted, watched(settings), self.poll_s),
            method_name="execute_complete",
        )

    def execute_complete(self, context: Any, event: dict[str, Any]) -> dict[str, Any]:
        if event["status"] == UNHEALTHY:
            reasons = "; ".join(f"{job}: {', '.join(r)}" for job, r in event["reasons"].items())
            raise StreamUnhealthyError(f"live stream unhealthy: {reasons}")
        self.log.info("streams now wanted %s", "running" if event["wanted_running"] else "stopped")
        return event
