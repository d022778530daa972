"""
### Board-detail stream: start or stop on request

`action=start`: the live join and sink are wanted running from now on, and started now if they
do not run. `action=stop`: each is asked to stop after its current batch (the join first, so the
sink loads what it wrote last), the run waits until both have stopped, and they stay stopped
(`board_detail_stream` leaves them so) until started again. Params other than `action` are used
when a stream is started (see `board_detail_stream`).
"""

from __future__ import annotations

from airflow.sdk import Param, task

from boardstream_airflow.dags import boardstream_dag
from boardstream_airflow.streams import stream_params


@boardstream_dag(
    __doc__,
    "spark",
    "stream",
    dag_id="board_detail_stream_request",
    schedule=None,
    default_args={"retries": 0},
    params={"action": Param("start", enum=["start", "stop"]), **stream_params()},
)
def board_detail_stream_request() -> None:
    @task
    def request(params: dict) -> list[dict]:
        from boardstream import supervision
        from boardstream_airflow.streams import stream_options, stream_settings

        settings = stream_settings()
        if params["action"] == "stop":
            statuses = supervision.stop(settings)
        else:
            statuses = supervision.start(settings, stream_options(params))
        return [{"job": s.job, "running": s.running, "wanted": s.record.desired} for s in statuses]

    request()


board_detail_stream_request()
