"""``boardstream demo``: the platform end to end, as a user runs it, through the local Airflow.

Loads a demo data set with the ``demo_data`` DAG, runs ``board_detail_pipeline`` (join and sink
by spark-submit) and then ``reconciliation``, each waited for; prints the reconciliation's
verdict and counts from the ledger and where the UI is. Safe to re-run: the jobs resume from
their checkpoints, the sink upserts, and the generator's same seed yields the same records.
"""

from __future__ import annotations

import logging
from typing import Any

from boardstream import database
from boardstream.entrypoints.airflow_api import AirflowApi
from boardstream.reconcile.checks.spark_checks import BALANCE
from boardstream.reconcile.checks.vocabulary import SUMMARY_ORDER
from boardstream.reconcile.evidence import run_ledger as ledger
from boardstream.settings import Settings
from boardstream.stack.airflow import AirflowStandalone

PIPELINE, RECONCILIATION = "board_detail_pipeline", "reconciliation"
DAGS = ("demo_data", PIPELINE, RECONCILIATION)
# What each waited-on DAG run is doing meanwhile, for the demo's log.
PHASES = {
    "demo_data": "the generator produces the members and boards into Kafka",
    PIPELINE: "spark-submit runs the join, then the sink loads board_detail",
    RECONCILIATION: "the snapshot, the exact checks, then Great Expectations and its Data Docs",
}
logger = logging.getLogger(__name__)


def run_demo(settings: Settings, generator: dict[str, Any]) -> int:
    airflow = AirflowStandalone(settings)
    if airflow.process.pid() is None:
        print("demo: Airflow is not running; start it with `boardstream stack up --airflow`")
        return 1
    api = AirflowApi(airflow.address, settings.airflow_user, airflow.password())
    runs = ledger.RunLedger.shipped(settings)
    newest = runs.recent_runs(database.engine(settings.database), limit=1)
    before = newest[0]["run_id"] if newest else 0  # the ledger's runs before this demo
    for dag_id in DAGS:
        logger.info("waiting for Airflow's DAG processor to parse %s", dag_id)
        api.wait_for_dag(dag_id)
    pipeline_paused = api.is_paused(PIPELINE)
    for dag_id in ("demo_data", RECONCILIATION):
        api.unpause(dag_id)
    run_id = api.trigger("demo_data", generator)
    if not _waited(api, airflow.address, "demo_data", run_id, "triggered"):
        return 1
    # The pipeline is unpaused only now, with the data loaded: the run the scheduler queues for
    # its latest interval then does the work, instead of running once too early and holding a
    # triggered run behind it (one run at a time).
    run_id = api.run_started_by_unpausing(PIPELINE) if pipeline_paused else None
    how = "the scheduler queued it when the DAG was unpaused"
    if run_id is None:
        ahead = api.active_runs(PIPELINE)
        run_id = api.trigger(PIPELINE)
        how = f"triggered; it waits for {ahead[0]} to finish first" if ahead else "triggered"
    if not _waited(api, airflow.address, PIPELINE, run_id, how):
        return 1
    logger.info(
        "waiting for the scheduler to queue the reconciliation run the sink's Asset event "
        "(boardstream://board_detail, from %s) triggers",
        run_id,
    )
    reconciliation = api.asset_triggered_run(RECONCILIATION, PIPELINE, run_id)
    if reconciliation is None:
        reconciliation = api.trigger(RECONCILIATION)
        logger.warning("no Asset-triggered reconciliation yet; triggered %s", reconciliation)
    else:
        logger.info("reconciliation %s was triggered by %s's Asset event", reconciliation, run_id)
    logger.info("waiting for %s to finish: %s", reconciliation, PHASES[RECONCILIATION])
    api.wait(RECONCILIATION, reconciliation)
    passed = _print_reconciliation(
        settings, f"airflow:{RECONCILIATION}/{reconciliation}/reconcile", before
    )
    print(
        f"\nUI: {airflow.address}/plugin/pipeline-health (Pipeline health), DAGs at "
        f"{airflow.address}/dags\nlog in as {settings.airflow_user!r} with the password in "
        f"{airflow.passwords_file}"
    )
    return 0 if passed else 1


def _waited(api: AirflowApi, address: str, dag_id: str, run_id: str, how: str) -> bool:
    logger.info("%s (%s; %s); waiting for it to finish: %s", dag_id, run_id, how, PHASES[dag_id])
    if api.wait(dag_id, run_id) == "success":
        return True
    print(f"demo: {dag_id} failed; its task logs are in the UI at {address}")
    return False


def _print_reconciliation(settings: Settings, run_by: str, before: int | None = None) -> bool:
    """The ledger's record of the run the task made, as the task log shows it: the balance,
    then the findings it has, under the summary's names and in its order (docs/RECONCILIATION.md,
    "What a run checks"). Runs after ``before`` (the ledger's newest when the demo began) that
    came first are named last, with why: the schedule's quarter hour can fall while the demo
    loads its data, and the Pipeline health page then shows that run before the demo's."""
    runs = ledger.RunLedger.shipped(settings).recent_runs(database.engine(settings.database), 50)
    run = next((run for run in runs if run["run_by"] == run_by), None)
    if run is None:
        print(f"demo: no reconciliation run by {run_by} in the ledger")
        return False
    status = ledger.status_of(run)
    print(f"\nreconciliation run {run['run_id']}: {status}")
    if status == ledger.ERRORED:  # it reached no verdict: no counts to show, but why
        print(f"  {(run.get('error') or 'no error recorded').splitlines()[0]}")
        return False
    counts = run["counts"] or {}
    for name in BALANCE:
        print(f"  {name:<14} {counts.get(name, 0):>10,}")
    for kind in SUMMARY_ORDER:
        count, examples = run["issues"].get(kind, (0, []))
        if count and kind not in BALANCE:
            print(f"  {kind}: {count:,} ({', '.join(examples)})")
    if counts.get("pending"):
        print(
            f"  the {counts['pending']:,} pending boards wait for their member: the join sends "
            "each to board-unmatched once it has waited the pipeline's unmatched_timeout (10m "
            "unless set); the reconciliation task log lists the oldest with their age"
        )
    for first in sorted(
        (r for r in runs if before is not None and before < r["run_id"] < run["run_id"]),
        key=lambda r: r["run_id"],
    ):
        print(
            f"  (run {first['run_id']} came first, by {first['run_by']}: it began before the "
            "pipeline had loaded the demo's data, so it checked the topics as they were then; "
            "the 15-minute schedule can fall while the demo runs)"
        )
    return bool(run["passed"])
