"""Where aggregation results go: a compacted topic keyed by group with JSON values, and dead
letters to the DLQ topic, both from the processor's (route, key, value) rows."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import TopicSpec, create_topics
from boardstream.settings import Settings

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


def create_output_topic(settings: Settings, topic: str) -> None:
    """Compacted: a reader restoring the results replays about one record per group."""
    spec = TopicSpec(
        topic, settings.partitions, settings.replication_factor, {"cleanup.policy": "compact"}
    )
    create_topics(admin_client(settings), settings, [spec])
