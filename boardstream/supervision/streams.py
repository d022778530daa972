"""The streams boardstream keeps running: the join and the sink, each a long-lived Spark
application on its own checkpoint, started with a continuous trigger."""

from __future__ import annotations

from dataclasses import dataclass

from boardstream.errors import InvalidOptionError
from boardstream.joins.job import QUERY_NAME as JOIN
from boardstream.settings import Settings
from boardstream.sink.job import QUERY_NAME as SINK
from boardstream.spark.triggers import (
    LIVE_INTERVAL,
    PROCESSING_TIME,
    REAL_TIME,
    Trigger,
    require_interval,
)
from boardstream.stack.ports import env_var

LIVE_TRIGGERS = (PROCESSING_TIME, REAL_TIME)


@dataclass(frozen=True)
class StreamOptions:
    """How the live streams run: the join's trigger (real-time needs the JVM engine and a task
    slot per source and shuffle partition) and its micro-batch (or checkpoint) interval, the
    sink's micro-batch interval, and the join's own flags (e.g. ``--unmatched-timeout=10m``)."""

    trigger: Trigger = PROCESSING_TIME
    interval: str = LIVE_INTERVAL
    sink_interval: str = LIVE_INTERVAL
    join_args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.trigger not in LIVE_TRIGGERS:
            raise InvalidOptionError(
                f"a live stream's trigger is one of {', '.join(LIVE_TRIGGERS)}, got "
                f"{self.trigger!r} (available-now is the catch-up DAG's)",
                "trigger",
            )
        object.__setattr__(self, "trigger", Trigger(self.trigger))  # a name given as text
        require_interval(self.trigger, self.interval)
        require_interval(PROCESSING_TIME, self.sink_interval, "sink_interval")


@dataclass(frozen=True)
class Stream:
    """One supervised stream: its job (``boardstream job list``), the flags it runs with, and
    the checkpoint it owns while it runs."""

    job: str
    args: tuple[str, ...]
    checkpoint: str  # its URI
    cores: int  # its share of a Spark cluster (local mode ignores it)
    cores_setting: str  # the setting of ``cores`` (BOARDSTREAM_STREAM_<JOB>_CORES)
    sources: tuple[str, ...] = ()  # the topics it reads: its lag is counted on them

    def conf(self) -> dict[str, str]:
        """Its spark-submit settings of its own: a standalone application otherwise takes every
        free core of the cluster, and the next stream would wait for one forever."""
        return {"spark.cores.max": str(self.cores)}


def board_detail_streams(settings: Settings, options: StreamOptions) -> tuple[Stream, ...]:
    """The join, then the sink (the order they start in). The sink reads board-detail in
    micro-batches whatever the join's trigger: it writes to a database, not to Kafka."""
    join_args = (f"--trigger={options.trigger}", f"--interval={options.interval}")
    sink_args = (f"--trigger={PROCESSING_TIME}", f"--interval={options.sink_interval}")
    return (
        Stream(
            JOIN,
            (*join_args, *options.join_args),
            settings.checkpoint(JOIN),
            settings.stream_join_cores,
            env_var("stream_join_cores"),
            (settings.member_topic, settings.board_topic),
        ),
        Stream(
            SINK,
            sink_args,
            settings.checkpoint(SINK),
            settings.stream_sink_cores,
            env_var("stream_sink_cores"),
            (settings.board_detail_topic,),
        ),
    )
