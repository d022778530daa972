"""The dead-letter envelope every boardstream job writes for a record it cannot use.

A JSON object with the error, where the record came from, and for its key and value: a prefix
of the original bytes (base64) no longer than the job's bound, the full size in bytes and the
SHA-256 of the full original, plus ``truncated``. Records within the bound are kept whole, so
they can be fixed and replayed; a larger one is still identified exactly (size and digest)
while its dead letter stays small enough for the producer and the DLQ topic: a record that
cannot be dead-lettered would fail its batch on every rerun and stall the job.

The envelope exists twice, as a Spark column (the join, the aggregations) and in Python (the
sink's ``foreachBatch``), built from the one field list :data:`FIELDS`; a test asserts both
give byte-identical JSON for the same record.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

FIELDS = (
    "error",
    "source_topic",
    "partition",
    "offset",
    "timestamp_ms",
    "key_base64",
    "key_bytes",
    "key_sha256",
    "value_base64",
    "value_bytes",
    "value_sha256",
    "truncated",
)
# The error is boardstream's own text (or a database's message, which can quote a whole row).
ERROR_MAX_CHARS = 2_000
# What a job keeps of a record when it has no record size limit of its own.
DEFAULT_PREFIX_BYTES = 256 * 1024
# Kafka's per-record framing (record batch header, varints, attributes) with room to spare.
RECORD_OVERHEAD_BYTES = 256
_TOPIC_MAX_CHARS = 249  # Kafka's limit on topic names (ASCII letters, digits, '.', '_', '-')
_NUMBER_CHARS = 20  # the widest int64 in decimal, sign included
_SHA256_HEX_CHARS = 64


def _base64_chars(size: int) -> int:
    return 4 * -(-size // 3)


def largest_dead_letter(prefix_bytes: int) -> int:
    """The largest dead-letter Kafka record (key + value + framing) a job with ``prefix_bytes``
    can write: what the producer's and the DLQ topic's limits must allow."""
    quoted = 2
    names = sum(len(name) + quoted + 2 for name in FIELDS) + 2  # "name": and the commas, {}
    strings = (
        6 * ERROR_MAX_CHARS  # escaped as \\uXXXX at worst
        + _TOPIC_MAX_CHARS
        + 2 * (_base64_chars(prefix_bytes) + _SHA256_HEX_CHARS)
        + 6 * quoted
    )
    numbers = 5 * _NUMBER_CHARS + len("false")
    return prefix_bytes + names + strings + numbers + RECORD_OVERHEAD_BYTES


def key_prefix(prefix_bytes: int) -> Column:
    """The dead letter's Kafka key: the original key, cut to ``prefix_bytes``."""
    return F.substring(F.col("key"), 1, prefix_bytes)


def envelope(error: Column, prefix_bytes: int) -> Column:
    """Over a Kafka source's columns (topic, partition, offset, key, value) plus
    ``timestamp_ms``: the envelope as a JSON string."""
    key, value = F.col("key"), F.col("value")
    columns = {
        "error": F.substring(error, 1, ERROR_MAX_CHARS),
        "source_topic": F.col("topic"),
        "partition": F.col("partition"),
        "offset": F.col("offset"),
        "timestamp_ms": F.col("timestamp_ms"),
        "key_base64": F.base64(key_prefix(prefix_bytes)),
        "key_bytes": F.octet_length(key),
        "key_sha256": F.sha2(key, 256),
        "value_base64": F.base64(F.substring(value, 1, prefix_bytes)),
        "value_bytes": F.octet_length(value),
        "value_sha256": F.sha2(value, 256),
        "truncated": F.coalesce(
            F.greatest(F.octet_length(key), F.octet_length(value)) > prefix_bytes, F.lit(False)
        ),
    }
    assert tuple(columns) == FIELDS
    return F.to_json(
        F.struct(*[column.alias(name) for name, column in columns.items()]),
        {"ignoreNullFields": "false"},
    )


def envelope_json(
    error: str,
    source_topic: str,
    partition: int,
    offset: int,
    timestamp_ms: int,
    key: bytes | None,
    value: bytes | None,
    prefix_bytes: int,
) -> str:
    """The same envelope built in Python, as Spark's ``to_json`` writes it (field order,
    no spaces, non-ASCII unescaped, control characters as upper-case ``\\uXXXX``)."""
    fields: dict[str, Any] = {
        "error": error[:ERROR_MAX_CHARS],
        "source_topic": source_topic,
        "partition": partition,
        "offset": offset,
        "timestamp_ms": timestamp_ms,
        "key_base64": _b64(key, prefix_bytes),
        "key_bytes": None if key is None else len(key),
        "key_sha256": None if key is None else hashlib.sha256(key).hexdigest(),
        "value_base64": _b64(value, prefix_bytes),
        "value_bytes": None if value is None else len(value),
        "value_sha256": None if value is None else hashlib.sha256(value).hexdigest(),
        "truncated": len(key or b"") > prefix_bytes or len(value or b"") > prefix_bytes,
    }
    assert tuple(fields) == FIELDS
    return "{" + ",".join(f"{_string(k)}:{_value(v)}" for k, v in fields.items()) + "}"


def _b64(data: bytes | None, prefix_bytes: int) -> str | None:
    return None if data is None else base64.b64encode(data[:prefix_bytes]).decode()


# Jackson escapes '"', '\\' and control characters, the short forms where JSON has them.
_ESCAPES = {i: f"\\u{i:04X}" for i in range(0x20)} | {
    ord('"'): '\\"',
    ord("\\"): "\\\\",
    ord("\b"): "\\b",
    ord("\t"): "\\t",
    ord("\n"): "\\n",
    ord("\f"): "\\f",
    ord("\r"): "\\r",
}


def _string(text: str) -> str:
    return '"' + text.translate(_ESCAPES) + '"'


def _value(value: Any) -> str:
    if isinstance(value, str):
        return _string(value)
    return json.dumps(value)  # int, bool, None
