"""Kafka records → valid join input, or a dead letter naming what is wrong.

The contract is :data:`~boardstream.joins.schema.BOARD_FIELDS` and ``MEMBER_FIELDS``; this module
enforces it on the JVM with column expressions, so no Python worker sees a record until it is
known to be well formed, and nothing is coerced: a quoted number is not an integer, a number is
not text, an integer outside int64 is not clipped, and text is never re-encoded.

Spark's lenient JSON reader (``from_json``) would do all of that silently (and accept single
quotes, NaN, trailing text, and a lone ``\\ud800`` turned into ``?``), so values are parsed with
``try_parse_json`` (strict RFC 8259 plus no duplicate keys and no unpaired surrogates) and each
field's JSON type is read from the variant. Two things no Spark parser checks are checked on the
text: that nothing follows the object, and (to name the problem when the strict parse fails)
unpaired surrogate escapes. Nothing here can throw: one bad record must not fail the query, so
only ``try_*`` conversions are used.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from boardstream.dead_letters import envelope, key_prefix
from boardstream.joins import schema

_JSON_WS = " \t\n\r"  # JSON's whitespace, nothing more
# Whitespace is trimmed with btrim (both ends) where only one end matters: Spark deprecates the
# two-argument ltrim/rtrim, with a warning in every session, and trimming the other end too
# cannot change a string's first or last non-blank character.
_HIGH = r"\\u[dD][89abAB][0-9a-fA-F]{2}"
_LOW = r"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_MEMBER_KEY = r"^-?[0-9]+$"


def _first_error(*checks: tuple[Column, Column]) -> Column:
    """The message of the first check whose condition holds, else null. Conditions are
    evaluated in order and only until one holds, so later ones may assume earlier ones failed."""
    result = F.lit(None).cast("string")
    for condition, message in reversed(checks):
        result = F.when(condition, message).otherwise(result)
    return result


def _excerpt(text: Column) -> Column:
    return F.substring(text, 1, 60)


def _bracket_step(acc: Column, char: Column) -> Column:
    """One character of a bracket string: the nesting depth after it, and how many times the
    depth has come back to zero or below."""
    depth = acc["depth"] + F.when(char.isin("{", "["), 1).when(char.isin("}", "]"), -1).otherwise(0)
    closed = (char != "") & (depth <= 0)  # split(_, "") ends with an empty string
    return F.struct(
        depth.alias("depth"), (acc["closed"] + F.when(closed, 1).otherwise(0)).alias("closed")
    )


def _trailing_text(text: Column) -> Column:
    """Whether anything but whitespace follows the first JSON value of ``text`` (which is known
    to start with a well-formed object). Strings are blanked out (escapes first, so an escaped
    quote does not end one), then the object ends where its brackets first balance: that must
    be the last bracket, and the last non-blank character. Only single-character regexes and
    one pass over the brackets: nothing recurses per character, whatever the input. The usual
    record ends with its only "}": then the object ends there and nothing follows it, which a
    split on "}" settles at a tenth of the regexes' cost (docs/BENCHMARKS.md)."""
    unescaped = F.when(  # most values have no escape: skip the pass
        F.contains(text, F.lit("\\")), F.regexp_replace(text, r"(?s)\\.", "")
    ).otherwise(text)
    skeleton = F.regexp_replace(unescaped, r'"[^"]*"', "s")
    brackets = F.regexp_replace(skeleton, r"[^\[\]{}]", "")
    start = F.struct(F.lit(0).alias("depth"), F.lit(0).alias("closed"))
    # A flat object (the usual record) needs no scan; the scan (an interpreted lambda per
    # bracket) is for nested values.
    closed = F.when(brackets == "{}", 1).otherwise(
        F.aggregate(F.split(brackets, ""), start, _bracket_step)["closed"]
    )
    ends_with_object = F.btrim(skeleton, F.lit(_JSON_WS)).endswith("}")
    only_brace_last = text.endswith("}") & (F.size(F.split(text, "}")) == 2)
    return F.when(only_brace_last, F.lit(False)).otherwise(~ends_with_object | (closed != 1))


def _unpaired_surrogate(text: Column) -> Column:
    """A ``\\uD800``-``\\uDFFF`` escape that is not half of a high-low pair (escaped
    backslashes are blanked first, so ``\\\\ud800`` is text, not an escape)."""
    escapes = F.regexp_replace(text, r"\\\\", "x")
    return escapes.rlike(f"{_HIGH}(?!{_LOW})") | escapes.rlike(f"(?<!{_HIGH}){_LOW}")


def _json_checks(text: Column) -> list[tuple[Column, Column]]:
    """The value must be one strict JSON object, alone."""
    variant = F.col("_variant")
    # The strict parse succeeded, so the value is an object iff it starts with "{"; the type
    # is spelled out (schema_of_variant, costly on big objects) only for the message.
    # Most values start with their "{": the trim (a copy of the value) is for those that do not.
    is_object = text.startswith("{") | F.btrim(text, F.lit(_JSON_WS)).startswith("{")
    return [
        (~F.is_valid_utf8(text), F.lit("value is not valid UTF-8")),
        (
            variant.isNull() & _unpaired_surrogate(text),
            F.lit("value has an unpaired surrogate escape (\\ud800-\\udfff)"),
        ),
        (
            variant.isNull() & _jackson_strict(text),
            F.lit("value has a duplicate key in a JSON object"),
        ),
        (variant.isNull(), F.lit("value is not valid JSON")),
        (
            ~is_object,
            F.concat(
                F.lit("value is not a JSON object, got "),
                _type_name(F.schema_of_variant(variant)),
            ),
        ),
        (_trailing_text(text), F.lit("value has trailing text after the JSON object")),
    ]


def _jackson_strict(text: Column) -> Column:
    """Whether Jackson, held to strict JSON, reads ``text`` as an object: then a text the
    variant parser refused (and that has no unpaired surrogate) repeats a key."""
    corrupt = "_boardstream_corrupt_record"
    options = {
        "columnNameOfCorruptRecord": corrupt,
        "allowSingleQuotes": "false",
        "allowNonNumericNumbers": "false",
    }
    parsed = F.from_json(text, f"`{corrupt}` string", options)
    return parsed.isNotNull() & parsed[corrupt].isNull()


def _type_name(kind: Column) -> Column:
    """``STRING``, ``BIGINT``, ``DECIMAL(19,0)``, ``OBJECT``, ``ARRAY``... of a variant type."""
    return F.regexp_extract(kind, r"^[A-Z]+(\([0-9,]+\))?", 0)


def _kind(name: str) -> Column:
    """The JSON type of field ``name`` (null when absent, ``VOID`` when null)."""
    return F.col(f"_kind_{name}")


def _value(name: str) -> Column:
    """Field ``name`` as its contract type (string or bigint), read once per record."""
    return F.col(f"_value_{name}")


def _fields() -> dict[str, schema.Field]:
    """Every field of either topic, by name (a name shared by both has one JSON type)."""
    fields: dict[str, schema.Field] = {}
    for field in schema.BOARD_FIELDS + schema.MEMBER_FIELDS:
        known = fields.setdefault(field.name, field)
        assert (known.kind == schema.INT64) == (field.kind == schema.INT64), field.name
    return fields


def _read_fields(df: DataFrame, max_record_bytes: int) -> DataFrame:
    """Parse each value once (``_variant``) and read every field once: the
    checks and the typed columns refer to these columns, so Spark keeps them computed once
    instead of re-parsing for every reference. Oversized values are not parsed at all."""
    value = F.col("value")
    variant = F.when(
        F.octet_length(value) <= max_record_bytes, F.try_parse_json(value.cast("string"))
    )
    fields = _fields()
    # One walk over the object's fields picks out every contract field, each still a variant
    # (a path lookup per field would search the object once per field: twice the cost).
    picked = "struct<" + ", ".join(f"`{name}`: variant" for name in fields) + ">"
    df = df.withColumn("_variant", variant).withColumn(
        "_picked", F.try_variant_get(F.col("_variant"), "$", picked)
    )
    columns = {}
    for name, field in fields.items():
        as_type = "bigint" if field.kind == schema.INT64 else "string"
        one = F.col("_picked")[name]
        columns[f"_kind_{name}"] = F.schema_of_variant(one)
        columns[f"_value_{name}"] = F.try_variant_get(one, "$", as_type)
    return df.withColumns(columns)


def _field_checks(fields: tuple[schema.Field, ...]) -> list[tuple[Column, Column]]:
    """Per field, in contract order: present (if required), of its JSON type, in range."""
    checks = []
    for field in fields:
        kind, value = _kind(field.name), _value(field.name)
        absent = kind.isNull() | (kind == "VOID")
        if field.required:
            checks.append((absent, F.lit(f"missing field {field.name} (absent or null)")))
        integer = field.kind == schema.INT64
        expected = "BIGINT" if integer else "STRING"
        wanted = "a JSON integer in the int64 range" if integer else "a JSON string"
        checks.append(
            (
                ~absent & (kind != expected),
                F.concat(F.lit(f"{field.name} must be {wanted}, got "), _type_name(kind)),
            )
        )
        if integer:
            continue
        length = F.char_length(value)
        checks.append(
            (
                F.contains(value, F.lit(schema.FORBIDDEN_CHAR)),
                F.lit(f"{field.name} contains U+0000, which text columns cannot hold"),
            )
        )
        if field.min_chars:
            checks.append(
                (
                    ~absent & (length < field.min_chars),
                    F.lit(f"{field.name} is shorter than {field.min_chars} character(s)"),
                )
            )
        if field.max_chars is not None:
            checks.append(
                (
                    length > field.max_chars,
                    F.concat(
                        F.lit(f"{field.name} is "),
                        length.cast("string"),
                        F.lit(f" characters, more than {field.max_chars}"),
                    ),
                )
            )
        if field.kind == schema.TIMESTAMP:
            checks.append(
                (
                    ~absent & F.try_to_timestamp(value).isNull(),
                    F.concat(F.lit(f"{field.name} is not a timestamp: "), _excerpt(value)),
                )
            )
    return checks


def parse(
    raw: DataFrame,
    member_topic: str,
    board_topic: str,
    max_record_bytes: int,
    tick_topic: str | None = None,
) -> DataFrame:
    """Add ``error`` (null when valid), the typed input columns, and for an invalid record its
    dead letter (``dead_key``, ``dead_letter``, keeping up to ``max_record_bytes`` of the
    original key and value) to Kafka source rows. Records of ``tick_topic`` are of kind
    ``tick``: they carry nothing but a micro-batch (see :mod:`boardstream.joins.job`)."""
    value = F.col("value")
    text = value.cast("string")  # the bytes as they are: is_valid_utf8 checks them
    key = F.col("key").cast("string")
    is_member, is_board = F.col("topic") == member_topic, F.col("topic") == board_topic
    is_tick = F.col("topic") == F.lit(tick_topic)
    oversized = (
        F.octet_length(value) > max_record_bytes,
        F.concat(
            F.lit("oversized: "),
            F.octet_length(value).cast("string"),
            F.lit(f" bytes > {max_record_bytes}"),
        ),
    )
    key_utf8 = (key.isNotNull() & ~F.is_valid_utf8(key), F.lit("key is not valid UTF-8"))
    board_error = _first_error(
        (value.isNull(), F.lit("a board record with a null value (boards have no tombstones)")),
        oversized,
        key_utf8,
        *_json_checks(text),
        *_field_checks(schema.BOARD_FIELDS),
        (key.isNotNull() & (key != _value("id")), F.lit("key does not match id")),
    )
    key_id = key.try_cast("bigint")
    member_error = _first_error(
        (key.isNull(), F.lit("a member record without a key")),
        key_utf8,
        (~key.rlike(_MEMBER_KEY), F.concat(F.lit("member key is not an integer: "), _excerpt(key))),
        (
            key_id.isNull(),
            F.concat(F.lit("member key is outside the int64 range: "), _excerpt(key)),
        ),
        (
            key_id.cast("string") != key,
            F.concat(F.lit("member key is not in canonical form (leading zeros, -0): "), key),
        ),
        (value.isNull(), F.lit(None).cast("string")),  # a tombstone: valid
        oversized,
        *_json_checks(text),
        *_field_checks(schema.MEMBER_FIELDS),
        (_value("member_id") != key_id, F.lit("member_id in the value differs from the key")),
    )
    error = (
        F.when(is_member, member_error)
        .when(is_board, board_error)
        .when(is_tick, F.lit(None).cast("string"))
        .otherwise(F.concat(F.lit("unexpected topic "), F.col("topic")))
    )
    kafka_ms = F.col("timestamp_ms")
    kind = (
        F.when(is_board, "board")
        .when(is_tick, "tick")
        .when(value.isNull(), "tombstone")
        .otherwise("member")
    )
    modified = F.unix_millis(F.try_to_timestamp(_value("modified_at")))
    typed = {
        "kind": kind,
        "member_id": F.when(is_board, _value("member_id")).when(is_member, key_id),
        "event_ms": F.when(is_board, _value("created_ts"))
        .when(value.isNull(), kafka_ms)
        .otherwise(modified),
        "timestamp_ms": kafka_ms,
        "partition": F.col("partition"),
        "offset": F.col("offset"),
        **{name: F.when(is_board, _value(name)) for name in ("title", "body")},
        "board_id": F.when(is_board, _value("id")),
        # Members have no created_ts: 0, not null, keeps the column int64 in pandas.
        "created_ts": F.when(is_board, _value("created_ts")).otherwise(F.lit(0)),
        **{name: F.when(is_member, _value(name)) for name in ("nickname", "city", "phone")},
        "created_at": _value("created_at"),
        "modified_at": _value("modified_at"),
    }
    typed = {name: typed[name] for name in schema.names(schema.INPUT)}
    invalid = F.col("error").isNotNull()
    with_time = raw.withColumn("timestamp_ms", F.unix_millis(F.col("timestamp")))
    return (
        _read_fields(with_time, max_record_bytes)
        .withColumn("error", error)
        .select(
            "error",
            "topic",
            "key",
            "value",
            *[column.alias(name) for name, column in typed.items()],
            # The key as base64 text (pandas-safe) and the envelope; null for valid records,
            # so they carry no extra bytes.
            F.when(invalid, F.base64(key_prefix(max_record_bytes))).alias("dead_key"),
            F.when(invalid, envelope(F.col("error"), max_record_bytes)).alias("dead_letter"),
        )
    )


def routed(parsed: DataFrame) -> DataFrame:
    """The processor's input: schema.INPUT, then an invalid record's DLQ key and envelope.

    Invalid records travel through the stateful operator too (in a bucket of their own) rather
    than a second branch unioned with its output: a union would read and parse the Kafka source
    twice per micro-batch.

    No integer column may hold a null: pandas converts an Arrow batch, which can hold several
    buckets' rows, to one frame, and a single null turns the whole column into floats, so
    member ids above 2**53 would lose digits and the state would store what it cannot read back
    (a tick once made three buckets lose their members). Only a dead letter or a tick can lack
    one (valid records have every integer, by contract), and neither reads it: 0 stands in."""
    integers = {name for name, kind in schema.INPUT if kind in ("bigint", "int")}
    return parsed.select(
        *[
            F.coalesce(F.col(name), F.lit(0).cast(kind)).alias(name)
            if name in integers
            else F.col(name)
            for name, kind in schema.INPUT
        ],
        "dead_key",
        "dead_letter",
    )
