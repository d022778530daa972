"""The demo's path through the containers, as bin/demo takes it on the local stack: the topics
``airflow-init`` created, listed by the broker; then ``demo_data``, ``board_detail_pipeline``
and the ``reconciliation`` its Asset triggers, through the Airflow API server, the verdict read
back as the ``reconcile`` task's XCom."""

from __future__ import annotations

import json
import urllib.request
from typing import TYPE_CHECKING, Any

from boardstream.entrypoints.compose.commands import log
from boardstream.entrypoints.compose.env_file import airflow_url
from boardstream.entrypoints.compose.project import Project
from boardstream.settings import Settings

if TYPE_CHECKING:
    from boardstream.entrypoints.airflow_api import AirflowApi


def check_topics(project: Project) -> None:
    listed = project.compose(
        "exec",
        "-T",
        "kafka",
        "/opt/kafka/bin/kafka-topics.sh",
        "--bootstrap-server",
        "kafka:29092",
        "--list",
        capture=True,
    ).stdout.split()
    settings = Settings()
    wanted = {
        getattr(settings, f"{t}_topic")
        for t in ("member", "board", "board_detail", "unmatched", "dlq")
    }
    missing = wanted - set(listed)
    if missing:
        raise SystemExit(f"compose-run: topics missing after airflow-init: {sorted(missing)}")
    log(f"topics: {' '.join(sorted(listed))}")


def run_demo(project: Project, generator: dict[str, Any], attached: bool) -> dict[str, Any]:
    """The reconciliation's run and verdict, PASSED (else the run ends). ``generator``:
    demo_data's conf; ``attached``: a stack left up, where demo_data may have run already."""
    from boardstream.entrypoints.airflow_api import AirflowApi
    from boardstream.entrypoints.demo import DAGS, PIPELINE, RECONCILIATION

    env = project.env()
    api = AirflowApi(airflow_url(env), env["AIRFLOW_ADMIN_USER"], env["AIRFLOW_ADMIN_PASSWORD"])
    for dag_id in DAGS:
        api.wait_for_dag(dag_id, timeout_s=600)
    pipeline_paused = api.is_paused(PIPELINE)
    for dag_id in ("demo_data", RECONCILIATION):
        if api.is_paused(dag_id):
            api.unpause(dag_id)
    loaded = api._call("GET", "/api/v2/dags/demo_data/dagRuns?state=success&limit=1")
    if attached and loaded["dag_runs"]:
        log("demo_data has run in this stack already")
    else:
        _expect_success(api, "demo_data", api.trigger("demo_data", generator))
    # As bin/demo: the pipeline unpaused only with the data loaded, so the run the scheduler
    # queues then does the work; a run already queued or running is waited for, not doubled.
    ahead = api.active_runs(PIPELINE)
    pipeline_run = ahead[0] if ahead else None
    if pipeline_run is None and pipeline_paused:
        pipeline_run = api.run_started_by_unpausing(PIPELINE)
    pipeline_run = pipeline_run or api.trigger(PIPELINE)
    _expect_success(api, PIPELINE, pipeline_run)
    reconciliation = api.asset_triggered_run(RECONCILIATION, PIPELINE, pipeline_run)
    if reconciliation is None:
        # As bin/demo: a reconciliation still running (its schedule's) holds the Asset's run
        # back (one at a time); one triggered now runs after it, on the loaded data.
        reconciliation = api.trigger(RECONCILIATION)
        log(f"no Asset-triggered reconciliation yet; triggered {reconciliation}")
    _expect_success(api, RECONCILIATION, reconciliation)
    xcom = api._call(
        "GET",
        f"/api/v2/dags/{RECONCILIATION}/dagRuns/{urllib.request.quote(reconciliation)}"
        "/taskInstances/reconcile/xcomEntries/return_value",
    )
    value = xcom.get("value")
    value = json.loads(value) if isinstance(value, str) else value
    log(f"reconciliation {reconciliation}: {value}")
    if not (isinstance(value, dict) and value.get("passed") is True):
        raise SystemExit(f"compose-run: the reconciliation did not pass: {value}")
    return {"run": reconciliation, "verdict": "PASSED", **value}


def _expect_success(api: AirflowApi, dag_id: str, run_id: str) -> None:
    log(f"waiting for {dag_id} {run_id}")
    state = api.wait(dag_id, run_id, timeout_s=1800)
    if state != "success":
        for task in api.task_instances(dag_id, run_id):
            log(f"  {task.get('task_id')}: {task.get('state')}")
        raise SystemExit(f"compose-run: {dag_id} {run_id} ended {state}")
    log(f"{dag_id} {run_id}: success")
