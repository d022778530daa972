"""The live streams inside Airflow: the DAG params that say how they run, their settings (the
Kafka cluster from ``kafka_default`` as for every boardstream task, the Spark master from
``spark_default`` as SparkSubmitOperator reads it), and what the watch needs in the triggerer,
which sees neither connection. Nothing heavy is imported at DAG parse time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook, Param

from boardstream.spark.triggers import (
    INTERVAL_PATTERN,
    LIVE_INTERVAL,
    PROCESSING_TIME,
    REAL_TIME,
)

if TYPE_CHECKING:
    from boardstream.settings import Settings
    from boardstream.supervision import StreamOptions


# The Settings fields the watch reads: where the checkpoints, progress lines and register are,
# and the SLO.
WATCHED = ("var_dir", "checkpoint_root", "stream_max_batch_age_s", "stream_max_lag")


def stream_params() -> dict[str, Param]:
    """How a stream runs once started: DAG params of the supervising and the request DAG."""
    return {
        # Their names as plain text: a param's value is JSON in the serialized DAG.
        "trigger": Param(PROCESSING_TIME.value, enum=[PROCESSING_TIME.value, REAL_TIME.value]),
        "interval": Param(LIVE_INTERVAL, type="string", pattern=INTERVAL_PATTERN),
        "sink_interval": Param(LIVE_INTERVAL, type="string", pattern=INTERVAL_PATTERN),
        "unmatched_timeout": Param("10m", type="string", pattern=r"^[0-9]+(ms|s|m|h|d)$"),
        "join_mode": Param("latest", enum=["latest", "as-of"]),
    }


def stream_options(params: dict[str, Any]) -> StreamOptions:
    from boardstream.supervision import StreamOptions

    return StreamOptions(
        trigger=params["trigger"],
        interval=params["interval"],
        sink_interval=params["sink_interval"],
        join_args=(
            f"--unmatched-timeout={params['unmatched_timeout']}",
            f"--join-mode={params['join_mode']}",
        ),
    )


def stream_settings(
    kafka_conn_id: str = "kafka_default", spark_conn_id: str = "spark_default"
) -> Settings:
    """Settings for starting and stopping the streams: the master is the connection's host,
    a master URL (``spark://host:7077``, ``local[2]``), with its port if the port is apart."""
    from boardstream_airflow.hooks.kafka import BoardstreamKafkaHook

    connection = BaseHook.get_connection(spark_conn_id)
    if not connection.host:
        raise ValueError(f"Airflow connection {spark_conn_id!r} has no host (the Spark master)")
    master = f"{connection.host}:{connection.port}" if connection.port else connection.host
    settings = BoardstreamKafkaHook(kafka_config_id=kafka_conn_id).settings()
    return settings.model_copy(update={"spark_master": master})


def watched(settings: Settings) -> dict[str, Any]:
    """The watch's settings as JSON values (a trigger's arguments are serialised)."""
    return {name: _json(getattr(settings, name)) for name in WATCHED}


def _json(value: Any) -> Any:
    return value if value is None or isinstance(value, (int, float, str)) else str(value)
