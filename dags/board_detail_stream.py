"""
### Board-detail stream (live)

Keeps the join and the sink running as long-lived Spark applications on the `spark_default`
master (a cluster: `spark://host:7077`): a board reaches `board_detail` seconds after it arrives,
instead of up to ten minutes with `board_detail_pipeline`'s increments.

A continuous DAG, one run at a time. Each run:
1. **supervise**: starts each stream that is wanted running and is not (a driver that died is
   restarted here, and counted as a restart); a stream stopped on request stays stopped.
2. **watch**: a deferrable sensor, on the triggerer (no worker slot): it **fails** when a stream
   is not running, has had no batch within `BOARDSTREAM_STREAM_MAX_BATCH_AGE_S`, or lags more than
   `BOARDSTREAM_STREAM_MAX_LAG` offsets; it succeeds when a start or stop is requested. Either
   way the next run follows at once and acts on it.

Start and stop on request with `board_detail_stream_request` (param `action`): a request run of
this DAG would wait behind the watch, since a continuous DAG runs one at a time.

One driver per checkpoint: each stream's driver holds its checkpoint's lease while it runs, so
two starts make one stream, and `board_detail_pipeline` (available-now, for catch-up and
backfill) is refused while the stream owns the checkpoints: stop the stream first.
Params (used when a stream is started): `trigger` (the join's: `processing-time` or
`real-time`), `interval`, `sink_interval`, `unmatched_timeout`, `join_mode`.
"""

from __future__ import annotations

from airflow.sdk import task

from boardstream_airflow.dags import boardstream_dag
from boardstream_airflow.sensors.stream_watch import StreamWatchSensor
from boardstream_airflow.streams import stream_params


@boardstream_dag(
    __doc__,
    "spark",
    "stream",
    dag_id="board_detail_stream",
    schedule="@continuous",
    default_args={"retries": 0},  # a failed watch is the signal; the next run restarts
    params=stream_params(),
)
def board_detail_stream() -> None:
    @task
    def supervise(params: dict) -> list[dict]:
        """Each stream wanted running runs; what each is doing, for the log and XCom."""
        from boardstream import supervision
        from boardstream_airflow.streams import stream_options, stream_settings

        statuses = supervision.ensure(stream_settings(), stream_options(params))
        return [
            {
                "job": s.job,
                "wanted": s.record.desired,
                "running": s.running,
                "restarts": s.record.restarts,
                "driver": s.holder.describe() if s.holder else None,
            }
            for s in statuses
        ]

    supervise() >> StreamWatchSensor(task_id="watch")


board_detail_stream()
