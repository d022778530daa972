"""A small client of Airflow's public REST API (v2), for driving DAG runs from the command
line without importing Airflow: log in, unpause, trigger, wait with progress."""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from boardstream.errors import BoardstreamError

logger = logging.getLogger(__name__)

FINISHED = {"success", "failed"}


class AirflowApiError(BoardstreamError):
    """An HTTP error answer of the API, with its status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class AirflowUnreachableError(BoardstreamError):
    """The API did not answer (refused, or no answer within the request's 30 s)."""


class AirflowApi:
    def __init__(self, base_url: str, user: str, password: str) -> None:
        self.base_url = base_url.rstrip("/")
        token = self._call("POST", "/auth/token", {"username": user, "password": password})
        self.token = token["access_token"]

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        request = urllib.request.Request(
            self.base_url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        if getattr(self, "token", None):
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")[:500]
            raise AirflowApiError(
                f"Airflow API {method} {path}: {error.code} {detail}", error.code
            ) from None
        except OSError as error:
            raise AirflowUnreachableError(
                f"Airflow API at {self.base_url} unreachable: {error}"
            ) from None

    def wait_for_dag(self, dag_id: str, timeout_s: float = 300.0) -> None:
        """A new deployment's DAG files are parsed in the background: wait until it is."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self._call("GET", f"/api/v2/dags/{dag_id}")
                return
            except BoardstreamError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(3)

    def is_paused(self, dag_id: str) -> bool:
        return bool(self._call("GET", f"/api/v2/dags/{dag_id}")["is_paused"])

    def unpause(self, dag_id: str) -> None:
        self._call("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})

    def active_runs(self, dag_id: str) -> list[str]:
        """The ids of the DAG's queued and running runs, oldest first."""
        query = urllib.parse.urlencode({"state": ["queued", "running"]}, doseq=True)
        runs = self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns?{query}")["dag_runs"]
        return [run["dag_run_id"] for run in sorted(runs, key=lambda run: run["run_after"])]

    def run_started_by_unpausing(self, dag_id: str, timeout_s: float = 15.0) -> str | None:
        """Unpause a paused DAG and return the run the scheduler queues for its latest
        interval, if it queues one within ``timeout_s`` (a cron DAG without catchup does)."""
        self.unpause(dag_id)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            runs = self.active_runs(dag_id)
            if runs:
                return runs[0]
            time.sleep(1)
        return None

    def trigger(self, dag_id: str, conf: dict[str, Any] | None = None) -> str:
        run = self._call(
            "POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": None, "conf": conf or {}}
        )
        return run["dag_run_id"]

    def asset_triggered_run(
        self, dag_id: str, source_dag_id: str, source_run_id: str, timeout_s: float = 120.0
    ) -> str | None:
        """The id of the run of ``dag_id`` that the Asset events of run ``source_run_id`` of
        ``source_dag_id`` queued, waiting up to ``timeout_s`` for the scheduler to create it;
        None if it did not. Matched by the event, not by time: the event, and so the run it
        queues, can be stamped before the source run's own end_date."""
        query = urllib.parse.urlencode(
            {"source_dag_id": source_dag_id, "source_run_id": source_run_id}
        )
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                events = self._call("GET", f"/api/v2/assets/events?{query}")
            except AirflowApiError as error:
                # Airflow 3.3 answers 500 while a run the event created has no start_date yet
                # (its response model requires one): the run is queued, ask again.
                if error.status != 500 or time.monotonic() > deadline:
                    raise
                logger.debug("asset events not readable yet (%s); asking again", error)
                events = {"asset_events": []}
            found = triggered_run(events, dag_id)
            if found is not None or time.monotonic() > deadline:
                return found
            time.sleep(3)

    def run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        return self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")

    def wait(self, dag_id: str, run_id: str, timeout_s: float = 3600.0) -> str:
        """The run's final state; a line every 15 s meanwhile with its task states."""
        started = time.monotonic()
        last_line = 0.0
        while True:
            try:
                run = self.run(dag_id, run_id)
            except AirflowUnreachableError as error:
                # A loaded machine (the production-scale generator in a task beside the API
                # server) can keep an answer past 30 s: asked again until the wait's own end.
                if time.monotonic() - started > timeout_s:
                    raise
                logger.warning("%s: %s; asking again", dag_id, error)
                time.sleep(2)
                continue
            if run["state"] in FINISHED:
                took = time.monotonic() - started
                logger.info("%s: %s after %.0f s", dag_id, run["state"], took)
                return run["state"]
            elapsed = time.monotonic() - started
            if elapsed > timeout_s:
                raise BoardstreamError(f"{dag_id} run {run_id} not finished after {elapsed:.0f} s")
            if elapsed - last_line >= 15:
                last_line = elapsed
                logger.info("%s: %s (%.0f s)", dag_id, self._tasks(dag_id, run_id), elapsed)
            time.sleep(2)

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        """The run's task instances as the API gives them (state, hostname, ...)."""
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances"
        return self._call("GET", path)["task_instances"]

    def _tasks(self, dag_id: str, run_id: str) -> str:
        return ", ".join(
            f"{t['task_id']} {t['state'] or 'scheduled'}"
            for t in self.task_instances(dag_id, run_id)
        )


def triggered_run(events: dict[str, Any], dag_id: str) -> str | None:
    """From a ``GET /api/v2/assets/events`` payload, the run of ``dag_id`` its events created:
    the one an event triggered if any (a run can also consume older events), else the first."""
    runs = [
        run
        for event in events["asset_events"]
        for run in event["created_dagruns"]
        if run["dag_id"] == dag_id
    ]
    runs.sort(key=lambda run: not run.get("triggering", False))
    return runs[0]["run_id"] if runs else None
