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
        from airflow.sdk.exceptions import AirflowFailException

        from boardstream.joins.member_table import JoinOptions
        from boardstream.reconcile.repair import repair
        from boardstream.reconcile.run import checkpoints, reconcile_once
        from boardstream.spark.session import spark_session
        from boardstream_airflow.hooks.kafka import BoardstreamKafkaHook

        params = context["params"]
        settings = BoardstreamKafkaHook().settings()
        spark = spark_session(settings, "board-detail-repair")
        options = JoinOptions(mode=params["join_mode"])
        done = repair(spark, settings, params["run_id"], checkpoints(settings)[0], options)
        print(", ".join(f"{step}: {count:,}" for step, count in done.items()))
        run_by = f"airflow:{context['dag'].dag_id}/{context['run_id']}"
        result = reconcile_once(spark, settings, run_by)
        summary = "\n".join(result.summary())
        print(summary)
        if not result.passed:
            raise AirflowFailException(summary)
        return {"repaired": done, "run_id": result.run_id}

    repair_and_reconcile()


board_detail_repair()
