"""
### Board-detail pipeline

Every 10 minutes, and on demand: the join (`member` + `board` → `board-detail`,
`board-unmatched`, `board-dlq`) and then the sink (`board-detail` → table `board_detail`), each a
`spark-submit` of the job's entry point under `jobs/` in **available-now** mode: it processes
what has arrived since its checkpoint, in micro-batches, and stops. A killed or failed run
resumes from the checkpoint on retry, losing nothing (the sink's upserts are idempotent).

The sink updates the Asset `boardstream://board_detail`, so `reconciliation` runs after it.
The Spark master is the `spark_default` connection's (`local[2]` locally, a cluster's master
elsewhere); the Kafka cluster is `kafka_default`'s; the database is `BOARDSTREAM_DATABASE_URL`.
Params: `unmatched_timeout` (how long a board waits for its member) and `join_mode`
(`latest` or `as-of`).
"""

from __future__ import annotations

from airflow.sdk import Param

from boardstream_airflow.assets import BOARD_DETAIL
from boardstream_airflow.dags import boardstream_dag
from boardstream_airflow.operators.spark_submit import (
    RESUMABLE_JOB_ARGS,
    BoardstreamSparkSubmitOperator,
)


@boardstream_dag(
    __doc__,
    "spark",
    "pipeline",
    dag_id="board_detail_pipeline",
    schedule="*/10 * * * *",
    default_args=RESUMABLE_JOB_ARGS,
    params={
        "unmatched_timeout": Param("10m", type="string", pattern=r"^[0-9]+(ms|s|m|h|d)$"),
        "join_mode": Param("latest", enum=["latest", "as-of"]),
    },
)
def board_detail_pipeline() -> None:
    join = BoardstreamSparkSubmitOperator(
        task_id="join",
        job="board-detail-join",
        job_args=[
            "--trigger=available-now",
            "--join-mode={{ params.join_mode }}",
            "--unmatched-timeout={{ params.unmatched_timeout }}",
        ],
    )
    sink = BoardstreamSparkSubmitOperator(
        task_id="sink",
        job="board-detail-sink",
        job_args=["--trigger=available-now"],
        outlets=[BOARD_DETAIL],
    )
    join >> sink


board_detail_pipeline()
