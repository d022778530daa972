"""What every boardstream streaming job shares: the Kafka source, triggers, and running a query
until it is done (available-now) or stopped (processing-time: micro-batches every interval until
SIGTERM stops it cleanly)."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from py4j.protocol import Py4JJavaError
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from boardstream.errors import BoardstreamError
from boardstream.locations import checkpoint_uri
from boardstream.settings import Settings
from boardstream.spark import checkpoint_lease
from boardstream.spark.checkpoint_files import CheckpointFiles
from boardstream.spark.checkpoint_guard import guard_checkpoint
from boardstream.spark.kafka_data_loss import InputLostError, lost_input
from boardstream.spark.progress import ProgressListener
from boardstream.spark.triggers import (
    AVAILABLE_NOW,
    PROCESSING_TIME,
    REAL_TIME,
    REAL_TIME_TRIGGERS,
    TRIGGERS,
    Trigger,
    require_interval,
)
from boardstream.stream_progress import ProgressStore

logger = logging.getLogger(__name__)


class CheckpointLeaseLostError(BoardstreamError):
    """A driver could no longer renew its checkpoint's lease and stopped its query."""


STOP_POLL_S = 1  # how soon a requested stop is acted on
# A query whose Python worker started too late (late_python_worker) is restarted this many times,
# first after LATE_WORKER_PAUSE_S, each pause twice the last: 5+10+20+40+80 s, 2.5 minutes in all.
LATE_WORKER_MESSAGE = "Python worker failed to connect back"
LATE_WORKER_RESTARTS = 5
LATE_WORKER_PAUSE_S = 5.0
__all__ = [
    "AVAILABLE_NOW",
    "PROCESSING_TIME",
    "REAL_TIME",
    "REAL_TIME_TRIGGERS",
    "TRIGGERS",
    "Trigger",
]


@dataclass(frozen=True, kw_only=True)
class QueryConfig:
    """How a streaming job runs: its trigger, the micro-batch interval (processing-time), and
    its checkpoint (default: ``<checkpoint root>/<query name>``). Job configs extend it."""

    trigger: Trigger = AVAILABLE_NOW
    interval: str = "1 second"
    checkpoint: str | Path | None = None  # a path or a Hadoop filesystem URI

    def __post_init__(self) -> None:
        object.__setattr__(self, "trigger", Trigger.of(self.trigger))  # a name given as text
        require_interval(self.trigger, self.interval)

    @property
    def query_name(self) -> str:
        raise NotImplementedError

    def checkpoint_dir(self, settings: Settings) -> str:
        """The checkpoint's URI."""
        if self.checkpoint is None:
            return settings.checkpoint(self.query_name)
        return checkpoint_uri(self.checkpoint)


def kafka_stream(
    spark: SparkSession, settings: Settings, topics: list[str], max_offsets_per_trigger: int | None
) -> DataFrame:
    """Committed records of ``topics`` from the earliest offset (the checkpoint then rules).
    A gap in offsets (data deleted before it was read) fails the query instead of skipping."""
    reader = (
        spark.readStream.format("kafka")
        .options(**settings.to_spark_kafka_source_options())
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "true")
        .option("kafka.isolation.level", "read_committed")
        .option("includeHeaders", "false")
    )
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    return reader.load()


def configure_no_data_batches(spark: SparkSession, trigger: Trigger) -> None:
    """A processing-time ``transformWithState`` always asks for another (no-data) batch, so
    timers fire on an idle stream. That is right for a query that keeps running, but an
    available-now query would then never finish: it runs only data batches, and timers that
    expired since the last run fire in the first batch of the next run that has data."""
    enabled = "false" if trigger == AVAILABLE_NOW else "true"
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", enabled)


def with_trigger(writer: DataStreamWriter, trigger: Trigger, interval: str) -> DataStreamWriter:
    match Trigger.of(trigger):
        case Trigger.AVAILABLE_NOW:
            return writer.trigger(availableNow=True)
        case Trigger.PROCESSING_TIME:
            return writer.trigger(processingTime=interval)
        case Trigger.REAL_TIME:
            return writer.trigger(realTime=interval)


def output_mode(trigger: Trigger) -> str:
    """Every boardstream query emits each row once (append); real-time mode runs only update,
    which for those queries writes the same rows."""
    return "update" if trigger == REAL_TIME else "append"


def start_to_kafka(
    rows: DataFrame,
    settings: Settings,
    name: str,
    checkpoint: str,
    trigger: Trigger,
    interval: str,
    identity: Mapping[str, object],
) -> StreamingQuery:
    """Start a query writing Kafka rows (topic, key, value), checkpointed, under ``trigger``;
    refused if the checkpoint was written under another ``identity`` (see checkpoint_guard)."""
    guard_checkpoint(CheckpointFiles(rows.sparkSession), checkpoint, {"query": name, **identity})
    writer = (
        rows.writeStream.queryName(name)
        .format("kafka")
        .options(**settings.to_spark_kafka_sink_options())
        .option("checkpointLocation", checkpoint)
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
    exit_when_lost: bool = False,
) -> StreamingQuery:
    """Start the query built by ``start()`` with a progress listener; block until it ends.
    SIGTERM (e.g. Airflow stopping a task), or a stop asked through its checkpoint's lease (the
    stream's supervisor, from any host), stops the query between batches. With its ``config``,
    the query holds its checkpoint's lease while it runs (:mod:`.checkpoint_lease`): a second
    driver on the same checkpoint is refused, and with ``exit_when_lost`` (a driver's main) the
    process ends itself in time once the lease is lost (:func:`.checkpoint_lease.hold`). A query
    that failed raises; one returned has finished or stopped, even with an ``exception()``
    (the batch the stop cancelled, see :func:`_run_restarting_late_workers`).

    The handler only takes note: it runs on the main thread, which is waiting on its py4j
    connection, and a py4j call from it would read that same socket again ("reentrant call",
    the stop lost and the gateway broken). The wait is therefore in short steps, and the stop
    comes from the loop."""
    lease = (
        checkpoint_lease.hold(
            settings,
            config.checkpoint_dir(settings),
            config.query_name,
            _driver_details(spark, config),
            exit_when_lost,
        )
        if config is not None
        else nullcontext(None)
    )
    listener = ProgressListener(ProgressStore(settings.database))
    propagate_java_errors(spark)
    with lease as held:
        spark.streams.addListener(listener)
        # A stop is asked by SIGTERM here, or from any host through the lease (the supervisor's
        # halt: checkpoint_lease.ask_to_stop), which its holder learns at its next renewal.
        stop_requested = held.release_asked if held is not None else threading.Event()
        lost = held.lost if held is not None else threading.Event()
        previous = signal.signal(signal.SIGTERM, lambda *_: stop_requested.set())
        try:
            query = _run_restarting_late_workers(
                spark, start, stop_requested, lost, settings.lease_ttl_s / 6
            )
            if query.lastProgress is not None:
                listener.wait_for(str(query.runId), query.lastProgress["batchId"])
        finally:
            signal.signal(signal.SIGTERM, previous)
            spark.streams.removeListener(listener)
    if lost.is_set():
        raise CheckpointLeaseLostError(
            f"{query.name}: its checkpoint's lease was lost (not renewed within "
            f"{settings.lease_ttl_s:g} s, or taken by another driver): the query was stopped"
        )
    return query


def _run_restarting_late_workers(
    spark: SparkSession,
    start: Callable[[], StreamingQuery],
    stop_requested: threading.Event,
    lease_lost: threading.Event,
    lost_stop_s: float,
) -> StreamingQuery:
    """Run the query from ``start()`` until it ends, a stop is requested, or its checkpoint's
    lease is lost (another driver may hold it by the TTL's end); a query that failed
    because a Python worker did not connect back in time (:func:`late_python_worker`) is started
    again from its checkpoint, at most :data:`LATE_WORKER_RESTARTS` times, after a pause that
    doubles each time, so that a burst of load can pass."""
    restarts = 0
    while True:
        query = start()
        try:
            while not query.awaitTermination(STOP_POLL_S):
                if lease_lost.is_set():
                    _stop_within(spark, query, lost_stop_s)
                    return query
                if stop_requested.is_set():
                    logger.info(
                        "stop requested: stopping %s, its batch under way cancelled "
                        "(replayed from the checkpoint at the next start)",
                        query.name,
                    )
                    quiet_jvm_logging(spark)
                    query.stop()
            return query
        except StreamingQueryException as error:
            if lease_lost.is_set():  # a write refused for it (a fence): run says so
                return query
            if stop_requested.is_set():
                # Spark takes a foreachBatch whose job the stop cancelled for a failed batch
                # (it recognises only its own code's interruptions): the stop, all the same.
                logger.info("%s stopped mid-batch: %s", query.name, str(error).split("\n")[0])
                return query
            lost = lost_input(error)
            if lost is not None:
                raise InputLostError(
                    f"{query.name}: records of its input were deleted before it read them: "
                    f"{lost}; the reconciliation's verdict names them"
                ) from None
            restarts += 1
            if restarts > LATE_WORKER_RESTARTS or not late_python_worker(error):
                raise
            pause_s = LATE_WORKER_PAUSE_S * 2 ** (restarts - 1)
            logger.warning(
                "%s: a Python worker did not connect back within Spark's 10 s (a loaded "
                "machine); restarting the query from its checkpoint in %g s (%d of %d)",
                query.name,
                pause_s,
                restarts,
                LATE_WORKER_RESTARTS,
            )
            if stop_requested.wait(pause_s):
                raise


def _stop_within(spark: SparkSession, query: StreamingQuery, timeout_s: float) -> None:
    """Stop ``query``, whose driver lost its checkpoint's lease, waiting at most ``timeout_s``
    for its thread (Spark's ``stopTimeout``, read at the stop): the lease is given up at two
    thirds of its TTL, and the driver must be gone before the TTL lets a successor in. Past the
    timeout the driver ends all the same, and its JVM's exit ends the query."""
    logger.warning(
        "%s lost its checkpoint's lease: stopping it within %g s, its batch under way cancelled",
        query.name,
        timeout_s,
    )
    quiet_jvm_logging(spark)
    spark.conf.set("spark.sql.streaming.stopTimeout", f"{int(timeout_s * 1000)}ms")
    try:
        query.stop()
    except Py4JJavaError as error:  # its java.util.concurrent.TimeoutException
        logger.warning("%s did not stop in time: %s", query.name, str(error).split("\n")[0])


def late_python_worker(error: BaseException) -> bool:
    """Whether ``error`` is Spark's ``Python worker failed to connect back``.

    Spark starts a Python process of its own, outside the daemon that forks the executors'
    workers, for each query run of a Python ``transformWithStateInPandas`` (on the driver,
    planning the run's first micro-batch, to learn the state variables from the processor's
    ``init``), and gives it a fixed 10 s to start and connect back: no setting governs it
    (``PythonWorkerFactory.createSimpleWorker``, Spark 4.3.0). That process imports pyspark
    from ``pyspark.zip``, which bytecode now makes four times lighter
    (:mod:`boardstream.spark.python_zip`); on a machine loaded enough it still starts too late,
    the query fails before the batch has run anything, and Spark's cleanup then logs ``failed
    to close state server socket`` (a NullPointerException: the state server had not been
    opened). The batch failed before
    it ran anything, and its offsets are replayed from the checkpoint as after any restart."""
    return LATE_WORKER_MESSAGE in str(error)


def propagate_java_errors(spark: SparkSession) -> None:
    """A JVM error raised in a Python callback (a ``foreachBatch`` function's Spark job) goes
    back to the JVM as itself, not as the text of its Python traceback.

    Spark matches a callback's traceback text against a regular expression that recurses once
    per character (``StreamExecution.PROXY_ERROR``, Spark 4.3.0), to tell an interrupted batch
    from a failed one: a sink's traceback of a few thousand characters overflowed the stream
    thread's stack (a ``java.lang.StackOverflowError`` in the driver's log, on a stop while the
    batch waited for executors, #48). py4j's ``propagate_java_exceptions`` sends the original
    instead; an error of Python's own still goes back as its traceback."""
    spark.sparkContext._gateway.python_parameters.propagate_java_exceptions = True


def quiet_jvm_logging(spark: SparkSession) -> None:
    """Every log4j logger of the driver's JVM (and of local mode's executors, which share it),
    and py4j's Python one, at FATAL from a requested stop to the driver's end. Stopping cancels
    the batch under way, and whatever Spark was doing then reports its interruption at ERROR
    under its own logger (the sink's write, the state store's changelog, a broadcast, the
    real-time shuffle's reader; py4j, the sink's cancelled ``foreachBatch`` call with its
    traceback), also while the driver tears down: none of it is a failure, the batch is
    replayed at the next start. The stop's outcome is not silenced: a query that failed before
    the stop still raises, and the job says so through Python's logging and its exit code. A
    cluster's executors log to their own files.
    """
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    configurator = log4j.core.config.Configurator
    configurator.setAllLevels(log4j.LogManager.ROOT_LOGGER_NAME, log4j.Level.FATAL)
    logging.getLogger("py4j.clientserver").setLevel(logging.CRITICAL)


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
