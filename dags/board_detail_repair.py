"""
### board_detail repair

Triggered by hand with the `run_id` of a failed reconciliation: re-joins exactly the boards
that run found missing from the source topics (the join's own code, in batch), reloads the
table rows it found missing, duplicated or mismatched, removes foreign rows, then reconciles
again; fails if the new run does not pass.
"""

from __future__ import annotations

from airflow.sdk import Param, task

from boardstream_airflow.dags import boardstream_dag


@boardstream_dag(
    __doc__,
    "reconciliation",
    dag_id="board_detail_repair",
    schedule=None,
    default_args={"retries": 0},
    params={
        "run_id": Param(type="integer", minimum=1, description="reconciliation run to repair"),
        "join_mode": Param("latest", enum=["latest", "as-of"]),
    },
)
def board_detail_repair() -> None:
    @task
    def repair_and_reconcile(**context) -> dict:
        from boardstream import reconcile
        from boardstream.reconcile import FULL
        from boardstream.spark.session import spark_session
        from boardstream_airflow.hooks.kafka import BoardstreamKafkaHook
        from boardstream_airflow.reconciliation import reconcile_or_fail

        params = context["params"]
        settings = BoardstreamKafkaHook().settings()
        spark = spark_session(settings, "board-detail-repair")
        done = reconcile.repair_run(spark, settings, params["run_id"], params["join_mode"])
        print(", ".join(f"{step}: {count:,}" for step, count in done.items()))
        return {"repaired": done, **reconcile_or_fail(spark, settings, context, FULL)}

    repair_and_reconcile()


board_detail_repair()
