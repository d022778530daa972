"""The dead-letter envelope every boardstream job writes for a record it cannot use: a JSON
string with the error, where the record came from, and its original key and value bytes in
base64, so a dead letter can be inspected, fixed and replayed without loss."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def envelope(error: Column) -> Column:
    """Over a Kafka source's columns (topic, partition, offset, key, value) plus
    ``timestamp_ms``."""
    return F.to_json(
        F.struct(
            error.alias("error"),
            F.col("topic").alias("source_topic"),
            F.col("partition"),
            F.col("offset"),
            F.col("timestamp_ms"),
            F.base64("key").alias("key_base64"),
            F.base64("value").alias("value_base64"),
        )
    )
