"""
### Full reconciliation

Daily: the reconciliation of every record of every topic and the whole `board_detail` table,
as the `reconciliation` DAG's incremental runs cannot (see docs/INCREMENTAL_RECONCILIATION.md,
"What each run can and cannot detect"). It also rebuilds the digest ledger the incremental runs
start from. The verdict, the evidence and the repair are as for `reconciliation`.
"""

from __future__ import annotations

from airflow.sdk import CronTriggerTimetable, task

from boardstream_airflow.dags import boardstream_dag


@boardstream_dag(
    __doc__,
    "reconciliation",
    dag_id="reconciliation_full",
    schedule=CronTriggerTimetable("30 2 * * *", timezone="UTC"),
    default_args={"retries": 0},  # a failed reconciliation is a verdict, not a glitch
)
def reconciliation_full() -> None:
    @task
    def reconcile(**context) -> dict:
        """One full run; its counts go to XCom, and a failure raises with the summary."""
        from boardstream.reconcile import FULL
        from boardstream.spark.session import spark_session
        from boardstream_airflow.hooks.kafka import BoardstreamKafkaHook
        from boardstream_airflow.reconciliation import reconcile_or_fail

        settings = BoardstreamKafkaHook().settings()
        spark = spark_session(settings, "reconciliation-full")
        return reconcile_or_fail(spark, settings, context, FULL)

    reconcile()


reconciliation_full()
