"""
### Reconciliation

Every 15 minutes, and whenever the pipeline updates `board_detail` (the Asset
`boardstream://board_detail`): proves that `board-detail` and `board_detail` hold exactly every
source board, plus the accounted unmatched and dead-lettered ones. An incremental run: it reads
what arrived since the last run and the table's rows that changed since they were checked (the
first run, with no digest ledger yet, is a full one); `reconciliation_full` re-reads everything
daily. Fails with a readable summary
(in the task log and XCom) when anything is missing, extra, duplicated or mismatched; the
evidence is in `board_detail_reconciliation_run` / `_issue` and the Great Expectations Data Docs.
Repair a failed run with the `board_detail_repair` DAG (param `run_id`).
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import AssetOrTimeSchedule, CronTriggerTimetable, task

from boardstream_airflow.assets import BOARD_DETAIL
from boardstream_airflow.dags import boardstream_dag


@boardstream_dag(
    __doc__,
    "reconciliation",
    dag_id="reconciliation",
    schedule=AssetOrTimeSchedule(
        # Unpaused, it waits for the next quarter hour. With a start date and no catchup,
        # Airflow runs the quarter hour just past at once, and the demo's first run checked
        # topics the pipeline had not loaded yet (every board "not yet read"); without one,
        # run_immediately decides, and 0 means never.
        timetable=CronTriggerTimetable(
            "*/15 * * * *", timezone="UTC", run_immediately=timedelta(0)
        ),
        assets=BOARD_DETAIL,
    ),
    start_date=None,
    default_args={"retries": 0},  # a failed reconciliation is a verdict, not a glitch
)
def reconciliation() -> None:
    @task
    def reconcile(**context) -> dict:
        """One run; its counts go to XCom, and a failure raises with the summary."""
        from boardstream.reconcile import INCREMENTAL
        from boardstream.spark.session import spark_session
        from boardstream_airflow.hooks.kafka import BoardstreamKafkaHook
        from boardstream_airflow.reconciliation import reconcile_or_fail

        settings = BoardstreamKafkaHook().settings()
        spark = spark_session(settings, "reconciliation", short_lived=True)
        return reconcile_or_fail(spark, settings, context, INCREMENTAL)

    reconcile()


reconciliation()
