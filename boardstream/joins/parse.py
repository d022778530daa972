"""Kafka records → valid join input, or a dead letter naming what is wrong.

Runs on the JVM (``from_json`` and column expressions): no Python worker sees a record until it
is known to be well formed. Every field is first read as text, so a wrong type is reported with
the offending value instead of silently becoming null. Nothing here can throw: ANSI casts would
fail the whole query on one bad record, so only ``try_*`` conversions are used.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from boardstream.dead_letters import envelope
from boardstream.joins import schema

JSON_FIELDS = (
    "id",
    "member_id",
    "title",
    "body",
    "created_ts",
    "nickname",
    "city",
    "phone",
    "created_at",
    "modified_at",
)
_JSON_SCHEMA = ", ".join(f"`{name}` string" for name in JSON_FIELDS) + ", `_corrupt` string"
_INTEGER = r"^-?[0-9]{1,18}$"


def _first_error(*checks: tuple[Column, Column]) -> Column:
    """The message of the first check whose condition holds, else null."""
    result = F.lit(None).cast("string")
    for condition, message in reversed(checks):
        result = F.when(condition, message).otherwise(result)
    return result


def _not_integer(field: Column, name: str) -> tuple[Column, Column]:
    return ~field.rlike(_INTEGER), F.concat(
        F.lit(f"{name} is not an integer: "), F.substring(field, 1, 60)
    )


def parse(raw: DataFrame, member_topic: str, board_topic: str, max_record_bytes: int) -> DataFrame:
    """Add ``error`` (null when valid) and the typed input columns to Kafka source rows."""
    value = F.col("value")
    json = F.from_json(
        value.cast("string"), _JSON_SCHEMA, {"columnNameOfCorruptRecord": "_corrupt"}
    )
    df = raw.withColumn("j", json).withColumn("key_text", F.col("key").cast("string"))
    j, key = F.col("j"), F.col("key_text")
    is_member, is_board = F.col("topic") == member_topic, F.col("topic") == board_topic
    common = [
        (
            F.octet_length(value) > max_record_bytes,
            F.concat(
                F.lit("oversized: "),
                F.octet_length(value).cast("string"),
                F.lit(f" bytes > {max_record_bytes}"),
            ),
        ),
        (value.isNotNull() & j["_corrupt"].isNotNull(), F.lit("not a JSON object")),
    ]
    board_error = _first_error(
        (value.isNull(), F.lit("a board record with a null value (boards have no tombstones)")),
        *common,
        (j["id"].isNull() | (j["id"] == ""), F.lit("missing field id")),
        (key.isNotNull() & (key != j["id"]), F.lit("key does not match id")),
        (j["member_id"].isNull(), F.lit("missing field member_id")),
        _not_integer(j["member_id"], "member_id"),
        (j["created_ts"].isNull(), F.lit("missing field created_ts")),
        _not_integer(j["created_ts"], "created_ts"),
    )
    modified = F.try_to_timestamp(j["modified_at"])
    member_error = _first_error(
        (key.isNull(), F.lit("a member record without a key")),
        _not_integer(key, "member key"),
        *common,
        (value.isNotNull() & j["member_id"].isNull(), F.lit("missing field member_id")),
        (value.isNotNull() & ~j["member_id"].rlike(_INTEGER), F.lit("member_id is not an integer")),
        (
            value.isNotNull() & (j["member_id"].try_cast("bigint") != key.try_cast("bigint")),
            F.lit("member_id in the value differs from the key"),
        ),
        (
            value.isNotNull() & modified.isNull(),
            F.concat(
                F.lit("modified_at is not a timestamp: "), F.substring(j["modified_at"], 1, 60)
            ),
        ),
    )
    error = (
        F.when(is_member, member_error)
        .when(is_board, board_error)
        .otherwise(F.concat(F.lit("unexpected topic "), F.col("topic")))
    )
    kafka_ms = F.unix_millis(F.col("timestamp"))
    kind = F.when(is_board, "board").when(value.isNull(), "tombstone").otherwise("member")
    typed = {
        "kind": kind,
        "member_id": F.when(is_board, j["member_id"]).otherwise(key).try_cast("bigint"),
        "event_ms": F.when(is_board, j["created_ts"].try_cast("bigint"))
        .when(value.isNull(), kafka_ms)
        .otherwise(F.unix_millis(modified)),
        "timestamp_ms": kafka_ms,
        "partition": F.col("partition"),
        "offset": F.col("offset"),
        "board_id": j["id"],
        "title": j["title"],
        "body": j["body"],
        # Members have no created_ts: 0, not null, keeps the column int64 in pandas.
        "created_ts": F.when(is_board, j["created_ts"].try_cast("bigint")).otherwise(F.lit(0)),
        **{name: j[name] for name in ("nickname", "city", "phone", "created_at", "modified_at")},
    }
    assert list(typed) == schema.names(schema.INPUT)
    return df.withColumn("error", error).select(
        "error", "topic", "key", "value", *[column.alias(name) for name, column in typed.items()]
    )


def routed(parsed: DataFrame) -> DataFrame:
    """The processor's input: schema.INPUT, then for an invalid record its DLQ key and envelope
    (a JSON string with the error, where the record came from and its original bytes in base64;
    null for valid records, so they carry no extra bytes).

    Invalid records travel through the stateful operator too (in a bucket of their own) rather
    than a second branch unioned with its output: a union would read and parse the Kafka source
    twice per micro-batch."""
    invalid = F.col("error").isNotNull()
    return parsed.select(
        *schema.names(schema.INPUT),
        F.when(invalid, F.base64("key")).alias("dead_key"),  # text: pandas-safe
        F.when(invalid, envelope(F.col("error"))).alias("dead_letter"),
    )
