"""
### board_detail repair

Triggered by hand with the `run_id` of a failed reconciliation: re-joins exactly the boards
that run found missing from the source topics (the join's own code, in batch), reloads the
table rows it found missing, duplicated or mismatched, removes foreign rows, then reconciles
again; fails if the new run does not pass.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import Param, dag, task


@dag(
    dag_id="board_detail_repair",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 0},
    doc_md=__doc__,
    tags=["boardstream", "reconciliation"],
    params={
        "run_id": Param(type="integer", minimum=1, description="reconciliation run to repair"),
        "join_mode": Param("latest", enum=["latest", "as-of"]),
    },
)
def board_detail_repair() -> None:
    @task
    def repair_and_reconcile(**context) -> dict:
        from boardstream import reconcile
        from boardstream.spark.session import spark_session
        from boardstream_airflow.hooks.kafka import BoardstreamKafkaHook
        from boardstream_airflow.reconciliation import reconcile_or_fail

        params = context["params"]
        settings = BoardstreamKafkaHook().settings()
        spark = spark_session(settings, "board-detail-repair")
        done = reconcile.repair_run(spark, settings, params["run_id"], params["join_mode"])
        print(", ".join(f"{step}: {count:,}" for step, count in done.items()))
        return {"repaired": done, **reconcile_or_fail(spark, settings, context)}

    repair_and_reconcile()


board_detail_repair()
