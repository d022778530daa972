"""Where aggregation results go: a compacted topic keyed by group with JSON values, and dead
letters to the job's DLQ topic, both from the processor's (route, key, value) rows.

Each job's DLQ is by default its own, ``<output topic>-dlq`` (:func:`dlq_topic`), created with
the output topic: the join's ``board-dlq`` is what reconciliation accounts boards against, and
an aggregation's rejects (of ``board`` records, too) must not read as the join's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from boardstream import dead_letters
from boardstream.aggregations import source
from boardstream.kafka.clients import admin_client
from boardstream.kafka.limits import require_fit, spark_producer_limit
from boardstream.kafka.topics import TopicSpec, create_topics
from boardstream.settings import Settings
from boardstream.spark import streaming

OUTPUT_DDL = "route string, key string, value string"
OUTPUT, DLQ = "output", "dlq"


def split_batch(rows: Iterator[pd.DataFrame]) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """A processor's input for one batch: the valid records in arrival order (by partition and
    offset), and the invalid ones as DLQ rows (their key stays base64 text until written)."""
    frame = pd.concat(list(rows), ignore_index=True).sort_values(["partition", "offset"])
    dead = frame[frame["dead_letter"].notna()]
    letters = [
        pd.DataFrame(
            {"route": DLQ, "key": dead["dead_key"].tolist(), "value": dead["dead_letter"].tolist()}
        )
    ]
    return frame[frame["dead_letter"].isna()], letters if len(dead) else []


def kafka_rows(results: DataFrame, output_topic: str, dlq_topic: str) -> DataFrame:
    dead = F.col("route") == DLQ
    return results.select(
        F.when(dead, F.lit(dlq_topic)).otherwise(F.lit(output_topic)).alias("topic"),
        F.when(dead, F.unbase64("key")).otherwise(F.col("key").cast("binary")).alias("key"),
        F.col("value"),
    )


def processed_rows(
    parsed: DataFrame,
    processor: StatefulProcessor,
    time_mode: str,
    config: OutputConfig,
    group_column: str,
) -> DataFrame:
    """Run one processor over the whole parsed stream (a single group, so one stream time and
    one order) and route its rows to the output topic or the job's DLQ. ``group_column`` names
    the constant grouping key: it is part of the state's key schema, so a job keeps its name."""
    results = (
        parsed.withColumn(group_column, F.lit(0))
        .groupBy(group_column)
        .transformWithStateInPandas(
            statefulProcessor=processor,
            outputStructType=OUTPUT_DDL,
            outputMode="Append",
            timeMode=time_mode,
        )
    )
    return kafka_rows(
        results, config.output_topic, dlq_topic(config.output_topic, config.dlq_topic)
    )


def dlq_topic(output_topic: str, chosen: str | None) -> str:
    """The job's DLQ: ``--dlq-topic`` if given, else ``<output topic>-dlq``."""
    return chosen or f"{output_topic}-dlq"


def create_output_topics(settings: Settings, output_topic: str, dlq: str) -> None:
    """The output compacted (a reader restoring the results replays about one record per
    group), the DLQ a stream; then check a dead letter fits the DLQ and the producer."""
    specs = [
        TopicSpec.replicated(
            settings, output_topic, settings.partitions, {"cleanup.policy": "compact"}
        ),
        TopicSpec.replicated(settings, dlq, settings.partitions, {"cleanup.policy": "delete"}),
    ]
    admin = admin_client(settings)
    create_topics(admin, settings, specs)
    largest = dead_letters.largest_dead_letter(dead_letters.DEFAULT_PREFIX_BYTES)
    what = f"a dead letter (keeping up to {dead_letters.DEFAULT_PREFIX_BYTES:,} bytes of a record)"
    require_fit(
        admin,
        settings,
        spark_producer_limit(settings.to_spark_kafka_options()),
        {dlq: (largest, what)},
    )


class OutputConfig(Protocol):
    """What :func:`start_output` reads of an aggregation job's config."""

    source: source.SourceOptions
    output_topic: str
    dlq_topic: str | None
    trigger: streaming.Trigger
    interval: str

    @property
    def query_name(self) -> str: ...

    def checkpoint_dir(self, settings: Settings) -> str: ...


def start_output(
    spark: SparkSession,
    settings: Settings,
    config: OutputConfig,
    rows: Callable[[SparkSession, Settings, Any], DataFrame],
    identity: dict[str, object],
) -> StreamingQuery:
    """What every aggregation's start shares: its compacted output topic, timers fired in
    no-data batches, and a checkpoint tied to the source, output, DLQ and job ``identity``."""
    create_output_topics(
        settings, config.output_topic, dlq_topic(config.output_topic, config.dlq_topic)
    )
    streaming.configure_no_data_batches(spark, config.trigger)
    return streaming.start_to_kafka(
        rows(spark, settings, config),
        settings,
        config.query_name,
        config.checkpoint_dir(settings),
        config.trigger,
        config.interval,
        {
            "source": source.identity(config.source),
            "output": config.output_topic,
            "dlq": config.dlq_topic,
            **identity,
        },
    )
