"""What every boardstream streaming job shares: the Kafka source, triggers, and running a query
until it is done (available-now) or stopped (processing-time: micro-batches every interval until
SIGTERM stops it cleanly)."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from boardstream.settings import Settings
from boardstream.spark import checkpoint_lease
from boardstream.spark.checkpoint_guard import guard_checkpoint
from boardstream.spark.progress import JsonlProgressListener
from boardstream.spark.triggers import (
    AVAILABLE_NOW,
    PROCESSING_TIME,
    REAL_TIME,
    REAL_TIME_TRIGGERS,
    TRIGGERS,
)

logger = logging.getLogger(__name__)

STOP_POLL_S = 1  # how soon a requested stop is acted on
# What a requested stop's cancelling of the batch under way logs at ERROR, though nothing failed:
# the driver's abort of the batch's write (the Kafka sink is a V2 write) and, where the
# executors share the driver's JVM (local mode), each killed task's abort of its write and of
# its commit, and real-time mode's error notifier. A cluster's executors log to their own files.
CANCELLED_BATCH_LOGGERS = (
    "org.apache.spark.sql.execution.datasources.v2.WriteToDataSourceV2Exec",
    "org.apache.spark.sql.execution.datasources.v2.DataWritingSparkTask",
    "org.apache.spark.util.Utils",
    "org.apache.spark.util.ErrorNotifier",
    # A killed task interrupted while it writes its state store's changelog (one class per
    # changelog format version, each logging under its own name).
    *(
        f"org.apache.spark.sql.execution.streaming.state.StateStoreChangelogWriterV{version}"
        for version in range(1, 5)
    ),
)
STOP_SETTLE_S = 10  # how long a stopped query's killed tasks may take to end, at most
__all__ = ["AVAILABLE_NOW", "PROCESSING_TIME", "REAL_TIME", "REAL_TIME_TRIGGERS", "TRIGGERS"]


@dataclass(frozen=True, kw_only=True)
class QueryConfig:
    """How a streaming job runs: its trigger, the micro-batch interval (processing-time), and
    its checkpoint (default: ``<checkpoint root>/<query name>``). Job configs extend it."""

    trigger: str = AVAILABLE_NOW
    interval: str = "1 second"
    checkpoint: Path | None = None

    @property
    def query_name(self) -> str:
        raise NotImplementedError

    def checkpoint_dir(self, settings: Settings) -> Path:
        return self.checkpoint or settings.checkpoints / self.query_name


def kafka_stream(
    spark: SparkSession, settings: Settings, topics: list[str], max_offsets_per_trigger: int | None
) -> DataFrame:
    """Committed records of ``topics`` from the earliest offset (the checkpoint then rules).
    A gap in offsets (data deleted before it was read) fails the query instead of skipping."""
    reader = (
        spark.readStream.format("kafka")
        .options(**settings.to_spark_kafka_options())
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "true")
        .option("kafka.isolation.level", "read_committed")
        .option("includeHeaders", "false")
    )
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    return reader.load()


def configure_no_data_batches(spark: SparkSession, trigger: str) -> None:
    """A processing-time ``transformWithState`` always asks for another (no-data) batch, so
    timers fire on an idle stream. That is right for a query that keeps running, but an
    available-now query would then never finish: it runs only data batches, and timers that
    expired since the last run fire in the first batch of the next run that has data."""
    enabled = "false" if trigger == AVAILABLE_NOW else "true"
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", enabled)


def with_trigger(writer: DataStreamWriter, trigger: str, interval: str) -> DataStreamWriter:
    if trigger == AVAILABLE_NOW:
        return writer.trigger(availableNow=True)
    if trigger == PROCESSING_TIME:
        return writer.trigger(processingTime=interval)
    if trigger == REAL_TIME:
        return writer.trigger(realTime=interval)
    raise ValueError(f"trigger must be one of {', '.join(REAL_TIME_TRIGGERS)}, got {trigger!r}")


def output_mode(trigger: str) -> str:
    """Every boardstream query emits each row once (append); real-time mode runs only update,
    which for those queries writes the same rows."""
    return "update" if trigger == REAL_TIME else "append"


def start_to_kafka(
    rows: DataFrame,
    settings: Settings,
    name: str,
    checkpoint: Path,
    trigger: str,
    interval: str,
    identity: Mapping[str, object],
) -> StreamingQuery:
    """Start a query writing Kafka rows (topic, key, value), checkpointed, under ``trigger``;
    refused if the checkpoint was written under another ``identity`` (see checkpoint_guard)."""
    guard_checkpoint(checkpoint, {"query": name, **identity})
    writer = (
        rows.writeStream.queryName(name)
        .format("kafka")
        .options(**settings.to_spark_kafka_sink_options())
        .option("checkpointLocation", str(checkpoint))
        .outputMode(output_mode(trigger))
    )
    if trigger == REAL_TIME:
        # Real-time mode writes its offset and commit logs asynchronously by default, and a
        # query stopped (SIGTERM) after a batch's state was committed but before its commit log
        # entry was written cannot start again on its checkpoint (STATE_STORE_CHECKPOINT_
        # LOCATION_NOT_EMPTY: seen in bench/compare, Spark 4.3.0). Synchronous commits cost a
        # short pause per checkpoint interval; the stream must survive its own restarts.
        writer = writer.option("asyncProgressTrackingEnabled", "false")
    return with_trigger(writer, trigger, interval).start()


def run(
    spark: SparkSession,
    settings: Settings,
    start: Callable[[], StreamingQuery],
    config: QueryConfig | None = None,
) -> StreamingQuery:
    """Start the query built by ``start()`` with a progress listener; block until it ends.
    SIGTERM (e.g. Airflow stopping a task, or the stream's supervisor) stops the query between
    batches. With its ``config``, the query holds its checkpoint's lease while it runs
    (:mod:`.checkpoint_lease`): a second driver on the same checkpoint is refused.

    The handler only takes note: it runs on the main thread, which is waiting on its py4j
    connection, and a py4j call from it would read that same socket again ("reentrant call",
    the stop lost and the gateway broken). The wait is therefore in short steps, and the stop
    comes from the loop."""
    lease = (
        checkpoint_lease.hold(
            config.checkpoint_dir(settings), config.query_name, _driver_details(spark, config)
        )
        if config is not None
        else nullcontext()
    )
    listener = JsonlProgressListener(settings.progress)
    with lease:
        spark.streams.addListener(listener)
        stop_requested = threading.Event()
        previous = signal.signal(signal.SIGTERM, lambda *_: stop_requested.set())
        try:
            query = start()
            while not query.awaitTermination(STOP_POLL_S):
                if stop_requested.is_set():
                    with cancelled_batch_quieted(spark):
                        query.stop()
            if query.lastProgress is not None:
                listener.wait_for(str(query.runId), query.lastProgress["batchId"])
        finally:
            signal.signal(signal.SIGTERM, previous)
            spark.streams.removeListener(listener)
    return query


@contextmanager
def cancelled_batch_quieted(spark: SparkSession) -> Iterator[None]:
    """Spark's ERROR lines for the batch a requested stop cancels silenced until its killed
    tasks have ended (not only its stages: a killed task still writing logs after them): the
    query stops as asked and its next start replays the batch from the checkpoint, so a healthy
    stop logs nothing at ERROR. Only a requested stop is silenced; a write that fails on its own
    still logs them, and the query's error after them."""
    jvm = spark.sparkContext._jvm
    log4j = jvm.org.apache.logging.log4j
    configurator = log4j.core.config.Configurator
    previous = {
        name: log4j.LogManager.getLogger(name).getLevel() for name in CANCELLED_BATCH_LOGGERS
    }
    for name in CANCELLED_BATCH_LOGGERS:
        configurator.setLevel(name, log4j.Level.OFF)
    try:
        yield
        # A cancelled stage ends at once; its killed tasks run on until they notice, and log.
        tracker = spark.sparkContext._jsc.sc().statusTracker()
        deadline = time.monotonic() + STOP_SETTLE_S
        while time.monotonic() < deadline and (
            tracker.getActiveStageIds()
            or any(e.numRunningTasks() for e in tracker.getExecutorInfos())
        ):
            time.sleep(0.1)
    finally:
        for name, level in previous.items():
            configurator.setLevel(name, level)


def _driver_details(spark: SparkSession, config: QueryConfig) -> dict[str, object]:
    """What the lease tells of the driver: its Spark application and how the query runs."""
    context = spark.sparkContext
    return {
        "application_id": context.applicationId,
        "master": context.master,
        "ui_url": context.uiWebUrl,
        "trigger": config.trigger,
        "interval": config.interval,
    }
