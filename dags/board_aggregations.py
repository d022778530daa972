"""
### Board aggregations

Hourly, and on demand: the board domain's stateful aggregations, each a `spark-submit` of a
generic job in available-now mode on the RocksDB state store (checkpoints under
`BOARDSTREAM_CHECKPOINT_ROOT`), results on compacted topics keyed by group:

- `boards_per_member`: table count over `board` (value field `member_id`; a deleted board
  decrements its member), to `board-boards-per-member`;
- `member_sessions`: boards per member activity session (30-minute gap), to
  `board-member-sessions`;
- `boards_per_city`: joined boards per city per minute (1-minute tumbling windows, 10 s grace), to
  `board-detail-boards-per-city`; runs after `board_detail_pipeline` has filled `board-detail`.

Too-late and malformed records go to the DLQ topic. Inspect a job's state with
`boardstream state show --checkpoint <checkpoint root>/<job>-<output topic>`.
"""

from __future__ import annotations

from boardstream.aggregations.presets import PRESETS
from boardstream_airflow.dags import boardstream_dag
from boardstream_airflow.operators.spark_submit import (
    RESUMABLE_JOB_ARGS,
    BoardstreamSparkSubmitOperator,
)


@boardstream_dag(
    __doc__,
    "spark",
    "aggregations",
    dag_id="board_aggregations",
    schedule="@hourly",
    default_args=RESUMABLE_JOB_ARGS,
)
def board_aggregations() -> None:
    for name in PRESETS:
        BoardstreamSparkSubmitOperator(task_id=name.replace("-", "_"), preset=name)


board_aggregations()
