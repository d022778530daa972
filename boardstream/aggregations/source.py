"""The input every aggregation job reads: a topic's records as (key, attribute, event time),
parsed on the JVM; a record a job cannot use carries its error and dead-letter envelope.

The attribute is the record's value as text, or one field of a JSON value (``--value-field``);
event time is the Kafka record timestamp unless ``--time-field`` names a payload field (epoch
milliseconds or an ISO timestamp). A null value is a tombstone: no attribute, record time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from boardstream.dead_letters import DEFAULT_PREFIX_BYTES, envelope, key_prefix
from boardstream.settings import Settings
from boardstream.spark import streaming


@dataclass(frozen=True)
class SourceOptions:
    topic: str
    value_field: str | None = None
    time_field: str | None = None
    max_offsets_per_trigger: int | None = None
    tombstones: bool = True  # False: a null value is an error (nothing to count it under)


def identity(options: SourceOptions) -> dict[str, object]:
    """What a checkpoint's state depends on (the batch size does not)."""
    return {k: v for k, v in asdict(options).items() if k != "max_offsets_per_trigger"}


def read_source(spark: SparkSession, settings: Settings, options: SourceOptions) -> DataFrame:
    raw = streaming.kafka_stream(spark, settings, [options.topic], options.max_offsets_per_trigger)
    return parse(raw, options)


def parse(raw: DataFrame, options: SourceOptions) -> DataFrame:
    value = F.col("value").cast("string")
    record_ms = F.unix_millis(F.col("timestamp"))
    is_object = F.from_json(value, "map<string,string>").isNotNull()
    attribute = (
        F.get_json_object(value, f"$.{options.value_field}") if options.value_field else value
    )
    event_ms = record_ms
    if options.time_field:
        field = F.get_json_object(value, f"$.{options.time_field}")
        event_ms = F.when(value.isNull(), record_ms).otherwise(
            F.coalesce(field.try_cast("bigint"), F.unix_millis(F.try_to_timestamp(field)))
        )
    needs_json = bool(options.value_field or options.time_field)
    error = F.when(F.col("key").isNull(), F.lit("record has no key"))
    if not options.tombstones:
        error = error.when(value.isNull(), F.lit("tombstone (null value): nothing to count"))
    if needs_json:
        error = error.when(value.isNotNull() & ~is_object, F.lit("not a JSON object"))
    if options.value_field:
        error = error.when(
            value.isNotNull() & attribute.isNull(), F.lit(f"no field {options.value_field!r}")
        )
    if options.time_field:
        error = error.when(event_ms.isNull(), F.lit(f"field {options.time_field!r} is not a time"))
    with_time = raw.withColumn("timestamp_ms", record_ms).withColumn("error", error)
    invalid = F.col("error").isNotNull()
    return with_time.select(
        F.col("key").cast("string").alias("entity"),
        F.when(~invalid, attribute).alias("attribute"),
        F.when(~invalid, event_ms).otherwise(F.lit(0)).alias("event_ms"),
        F.col("partition"),
        F.col("offset"),
        F.when(invalid, F.base64(key_prefix(DEFAULT_PREFIX_BYTES))).alias("dead_key"),
        F.when(invalid, envelope(F.col("error"), DEFAULT_PREFIX_BYTES)).alias("dead_letter"),
    )
