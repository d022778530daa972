"""Kafka records → valid join input, or a dead letter naming what is wrong.

The contract is a pipeline's declared fields (:class:`~boardstream.joins.schema.Contract`; the
shipped ``board_detail``'s is :data:`~boardstream.joins.schema.BOARD_DETAIL`, which :func:`parse`
turns into the processor's rows); this module enforces it on the JVM with column expressions,
so no Python worker sees a record until it is known to be well formed, and nothing is coerced: a
quoted number is not an integer, a number is not text, an integer outside int64 is not clipped,
a decimal is never rounded, and text is never re-encoded.

Spark's lenient JSON reader (``from_json``) would do all of that silently (and accept single
quotes, NaN, trailing text, and a lone ``\\ud800`` turned into ``?``), so values are parsed with
``try_parse_json`` (strict RFC 8259 plus no duplicate keys and no unpaired surrogates) and each
field's JSON type is read from the variant. Two things no Spark parser checks are checked on the
text: that nothing follows the object, and (to name the problem when the strict parse fails)
unpaired surrogate escapes. Nothing here can throw: one bad record must not fail the query, so
only ``try_*`` conversions are used.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain
from typing import NamedTuple

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from boardstream.dead_letters import envelope, key_prefix
from boardstream.joins import schema
from boardstream.joins.layout import JoinLayout
from boardstream.pipelines import FieldType, Pipeline, Timestamp, with_article

_JSON_WS = " \t\n\r"  # JSON's whitespace, nothing more
# Whitespace is trimmed with btrim (both ends) where only one end matters: Spark deprecates the
# two-argument ltrim/rtrim, with a warning in every session, and trimming the other end too
# cannot change a string's first or last non-blank character.
_HIGH = r"\\u[dD][89abAB][0-9a-fA-F]{2}"
_LOW = r"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
# An int64 table key's digits (the shipped pipeline's member key).
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
    """Field ``name`` as it is read (:func:`_read_as`), once per record."""
    return F.col(f"_value_{name}")


def _read_as(field: schema.Field) -> str:
    """The Spark type a field is read from its variant as: the JSON type's, nothing converted
    (a date is read as its text, checked, then typed: :func:`_typed`)."""
    return "string" if field.kind == schema.DATE else schema.typed_as(field)


def _fields(*sides: tuple[schema.Field, ...]) -> dict[str, schema.Field]:
    """Every field of either side (the shipped pipeline's unless given), by name: a name both
    sides have is read once, so it must be read as one type."""
    fields: dict[str, schema.Field] = {}
    for field in chain(*(sides or (schema.BOARD_FIELDS, schema.MEMBER_FIELDS))):
        known = fields.setdefault(field.name, field)
        assert _read_as(known) == _read_as(field), field.name
    return fields


def _read_fields(
    df: DataFrame, max_record_bytes: int, fields: dict[str, schema.Field]
) -> DataFrame:
    """Parse each value once (``_variant``) and read every field once: the
    checks and the typed columns refer to these columns, so Spark keeps them computed once
    instead of re-parsing for every reference. Oversized values are not parsed at all."""
    value = F.col("value")
    variant = F.when(
        F.octet_length(value) <= max_record_bytes, F.try_parse_json(value.cast("string"))
    )
    # One walk over the object's fields picks out every contract field, each still a variant
    # (a path lookup per field would search the object once per field: twice the cost).
    picked = "struct<" + ", ".join(f"`{name}`: variant" for name in fields) + ">"
    df = df.withColumn("_variant", variant).withColumn(
        "_picked", F.try_variant_get(F.col("_variant"), "$", picked)
    )
    columns = {}
    for name, field in fields.items():
        one = _picked(name)
        columns[f"_kind_{name}"] = F.schema_of_variant(one)
        columns[f"_value_{name}"] = F.try_variant_get(one, "$", _read_as(field))
    return df.withColumns(columns)


def _picked(name: str) -> Column:
    """Field ``name`` as the record has it, a variant."""
    return F.col("_picked")[name]


# A JSON number's variant types: an integer literal is BIGINT (DECIMAL(n,0) past int64), one
# with a fraction DECIMAL(p,s) (trailing zeros dropped: 1.50 is DECIMAL(2,1)), one with an
# exponent or past 38 digits DOUBLE.
def _is_integer(kind: Column) -> Column:
    return kind == "BIGINT"


def _is_exact_number(kind: Column) -> Column:
    return _is_integer(kind) | kind.startswith("DECIMAL")


def _is_number(kind: Column) -> Column:
    return _is_exact_number(kind) | (kind == "DOUBLE")


# Per parser kind: the variant types it accepts, and the words for what it wants.
_JSON_TYPES = {
    schema.INT64: (_is_integer, "a JSON integer in the int64 range"),
    schema.DOUBLE: (_is_number, "a JSON number"),
    schema.BOOLEAN: (lambda kind: kind == "BOOLEAN", "a JSON boolean (true or false)"),
}
_STRING = (lambda kind: kind == "STRING", "a JSON string")


def _json_type(field: schema.Field) -> tuple[Callable[[Column], Column], str]:
    if field.kind == schema.DECIMAL:
        wanted = f"a JSON number for decimal({field.precision},{field.scale}) (no exponent)"
        return _is_exact_number, wanted
    return _JSON_TYPES.get(field.kind, _STRING)


def _field_checks(fields: tuple[schema.Field, ...]) -> list[tuple[Column, Column]]:
    """Per field, in contract order: present (if required), of its JSON type, in range."""
    checks = []
    for field in fields:
        kind, value = _kind(field.name), _value(field.name)
        absent = kind.isNull() | (kind == "VOID")
        if field.required:
            checks.append((absent, F.lit(f"missing field {field.name} (absent or null)")))
        is_type, wanted = _json_type(field)
        checks.append(
            (
                ~absent & ~is_type(kind),
                F.concat(F.lit(f"{field.name} must be {wanted}, got "), _type_name(kind)),
            )
        )
        if _read_as(field) == "string":
            checks += _text_checks(field, absent)
        elif field.kind == schema.DOUBLE:
            checks.append(
                (
                    F.abs(value) == F.lit(float("inf")),
                    F.lit(f"{field.name} is a JSON number beyond the range of a double"),
                )
            )
        elif field.kind == schema.DECIMAL:
            checks.append(_decimal_fits(field, absent))
    return checks


def _text_checks(field: schema.Field, absent: Column) -> list[tuple[Column, Column]]:
    """A string's: no U+0000, its length bounds, and the form of a timestamp or a date."""
    value = _value(field.name)
    length = F.char_length(value)
    checks = [
        (
            F.contains(value, F.lit(schema.FORBIDDEN_CHAR)),
            F.lit(f"{field.name} contains U+0000, which text columns cannot hold"),
        )
    ]
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
    if field.kind == schema.DATE:
        checks.append(
            (
                ~absent & _date(value).isNull(),
                F.concat(F.lit(f"{field.name} is not a date (YYYY-MM-DD): "), _excerpt(value)),
            )
        )
    return checks


def _date(text: Column) -> Column:
    """``text`` as a date, null unless it is one, strictly ``YYYY-MM-DD`` (2021-02-29 is not)."""
    return F.try_to_date(text, "yyyy-MM-dd")


def _decimal_fits(field: schema.Field, absent: Column) -> tuple[Column, Column]:
    """An exact number's digits fit ``decimal(precision, scale)`` as they are: more after the
    point than ``scale`` would be rounded, more before it than ``precision - scale`` do not
    fit (the read is null), and neither is ever done."""
    kind = _kind(field.name)
    digits_after = F.regexp_extract(kind, r"^DECIMAL\([0-9]+,([0-9]+)\)$", 1)
    rounded = F.coalesce(digits_after.try_cast("int"), F.lit(0)) > field.scale
    too_big = _value(field.name).isNull()
    return (
        ~absent & _is_exact_number(kind) & (rounded | too_big),
        F.concat(
            F.lit(f"{field.name} does not fit decimal({field.precision},{field.scale}) "),
            F.lit("without rounding: "),
            _excerpt(F.to_json(_picked(field.name))),
        ),
    )


def _typed(field: schema.Field) -> Column:
    """Field ``field`` as its declared type holds it: a date as a date, the rest as read."""
    value = _value(field.name)
    return _date(value) if field.kind == schema.DATE else value


def _key_text(field: schema.Field) -> Column:
    """The Kafka key a record whose key field is ``field`` must have: the text itself, or an
    int64's canonical decimal text."""
    value = _value(field.name)
    return value.cast("string") if field.kind == schema.INT64 else value


def _int64_key(label: str, key: Column) -> list[tuple[Column, Column]]:
    """An int64 table key's form: decimal digits, in range, canonical (so one row has one
    key: 042 and 42 are not two rows)."""
    key_id = key.try_cast("bigint")
    return [
        (
            ~key.rlike(_MEMBER_KEY),
            F.concat(F.lit(f"{label} key is not an integer: "), _excerpt(key)),
        ),
        (
            key_id.isNull(),
            F.concat(F.lit(f"{label} key is outside the int64 range: "), _excerpt(key)),
        ),
        (
            key_id.cast("string") != key,
            F.concat(F.lit(f"{label} key is not in canonical form (leading zeros, -0): "), key),
        ),
    ]


class _Checked(NamedTuple):
    """Kafka rows with every field read and ``error`` set, and the columns that tell a
    record's side and its table key."""

    frame: DataFrame
    is_stream: Column
    is_table: Column
    is_tick: Column
    table_key: Column


def _checked(
    raw: DataFrame,
    contract: schema.Contract,
    stream_topic: str,
    table_topic: str,
    max_record_bytes: int,
    tick_topic: str | None,
) -> _Checked:
    """``raw`` with ``timestamp_ms``, each declared field read, and ``error``: null for a
    valid record, else the first way it breaks ``contract``."""
    value = F.col("value")
    text = value.cast("string")  # the bytes as they are: is_valid_utf8 checks them
    key = F.col("key").cast("string")
    is_table, is_stream = F.col("topic") == table_topic, F.col("topic") == stream_topic
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
    stream, table = contract.stream_label, contract.table_label
    stream_id = contract.stream_field(contract.stream_id)
    stream_error = _first_error(
        (
            value.isNull(),
            F.lit(
                f"{with_article(stream)} record with a null value "
                f"({schema.plural(stream)} have no tombstones)"
            ),
        ),
        oversized,
        key_utf8,
        *_json_checks(text),
        *_field_checks(contract.stream),
        (
            key.isNotNull() & (key != _key_text(stream_id)),
            F.lit(f"key does not match {stream_id.name}"),
        ),
    )
    key_field = contract.table_field(contract.table_key)
    integer_key = key_field.kind == schema.INT64
    table_key = key.try_cast("bigint") if integer_key else key
    table_error = _first_error(
        (key.isNull(), F.lit(f"{with_article(table)} record without a key")),
        key_utf8,
        *(_int64_key(table, key) if integer_key else []),
        (value.isNull(), F.lit(None).cast("string")),  # a tombstone: valid
        oversized,
        *_json_checks(text),
        *_field_checks(contract.table),
        (
            _value(key_field.name) != table_key,
            F.lit(f"{key_field.name} in the value differs from the key"),
        ),
    )
    error = (
        F.when(is_table, table_error)
        .when(is_stream, stream_error)
        .when(is_tick, F.lit(None).cast("string"))
        .otherwise(F.concat(F.lit("unexpected topic "), F.col("topic")))
    )
    with_time = raw.withColumn("timestamp_ms", F.unix_millis(F.col("timestamp")))
    fields = _fields(contract.stream, contract.table)
    frame = _read_fields(with_time, max_record_bytes, fields).withColumn("error", error)
    return _Checked(frame, is_stream, is_table, is_tick, table_key)


def _dead_letters(max_record_bytes: int) -> list[Column]:
    """The key as base64 text (pandas-safe) and the envelope; null for valid records, so they
    carry no extra bytes."""
    invalid = F.col("error").isNotNull()
    return [
        F.when(invalid, F.base64(key_prefix(max_record_bytes))).alias("dead_key"),
        F.when(invalid, envelope(F.col("error"), max_record_bytes)).alias("dead_letter"),
    ]


def parse(
    raw: DataFrame,
    member_topic: str,
    board_topic: str,
    max_record_bytes: int,
    tick_topic: str | None = None,
) -> DataFrame:
    """The shipped pipeline's records as its processor reads them: ``error`` (null when
    valid), the typed input columns (schema.INPUT), and for an invalid record its dead letter
    (``dead_key``, ``dead_letter``, keeping up to ``max_record_bytes`` of the original key and
    value). Records of ``tick_topic`` are of kind ``tick``: they carry nothing but a
    micro-batch (see :mod:`boardstream.joins.job`)."""
    checked = _checked(
        raw, schema.BOARD_DETAIL, board_topic, member_topic, max_record_bytes, tick_topic
    )
    is_board, is_member = checked.is_stream, checked.is_table
    value, kafka_ms = F.col("value"), F.col("timestamp_ms")
    kind = (
        F.when(is_board, "board")
        .when(checked.is_tick, "tick")
        .when(value.isNull(), "tombstone")
        .otherwise("member")
    )
    modified = F.unix_millis(F.try_to_timestamp(_value("modified_at")))
    typed = {
        "kind": kind,
        "member_id": F.when(is_board, _value("member_id")).when(is_member, checked.table_key),
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
    return checked.frame.select(
        "error",
        "topic",
        "key",
        "value",
        *[column.alias(name) for name, column in typed.items()],
        *_dead_letters(max_record_bytes),
    )


def parse_declared(
    raw: DataFrame,
    contract: schema.Contract,
    stream_topic: str,
    table_topic: str,
    max_record_bytes: int,
    tick_topic: str | None = None,
) -> DataFrame:
    """Any pipeline's records, checked against its ``contract``: ``error``, the Kafka
    record, its ``kind`` (``stream``, ``table``, ``tombstone`` or ``tick``), its fields typed
    as declared in a struct per side (``stream``, ``table``; null on the other side and for an
    invalid record), the table record's key as its type (``table_key``), and the dead letter
    columns, as :func:`parse` has them."""
    checked = _checked(raw, contract, stream_topic, table_topic, max_record_bytes, tick_topic)
    value, valid = F.col("value"), F.col("error").isNull()
    kind = (
        F.when(checked.is_stream, "stream")
        .when(checked.is_tick, "tick")
        .when(checked.is_table & value.isNull(), "tombstone")
        .when(checked.is_table, "table")
    )

    def side(is_side: Column, fields: tuple[schema.Field, ...]) -> Column:
        return F.when(
            is_side & valid & value.isNotNull(),
            F.struct(*[_typed(field).alias(field.name) for field in fields]),
        )

    return checked.frame.select(
        "error",
        "topic",
        "key",
        "value",
        "partition",
        "offset",
        "timestamp_ms",
        kind.alias("kind"),
        side(checked.is_stream, contract.stream).alias("stream"),
        side(checked.is_table, contract.table).alias("table"),
        F.when(checked.is_table & valid, checked.table_key).alias("table_key"),
        *_dead_letters(max_record_bytes),
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


def _epoch_ms(value: Column, declared: FieldType) -> Column:
    """A timestamp field's value in epoch milliseconds (floored), whatever its declared form."""
    match declared:
        case Timestamp(format="epoch_ms"):
            return value
        case Timestamp(format="epoch_us"):
            return F.unix_millis(F.timestamp_micros(value))
    return F.unix_millis(F.try_to_timestamp(value))


def routed_declared(parsed: DataFrame, pipeline: Pipeline, layout: JoinLayout) -> DataFrame:
    """The JVM operator's input for any pipeline (``layout.routed``) from
    :func:`parse_declared`'s rows: each valid record's table key, its event time in
    milliseconds (a stream record's ``event_time``, a table record's ``version_time``, a
    tombstone's Kafka time) and its side's fields as the state keeps them."""
    kind, stream, table = F.col("kind"), F.col("stream"), F.col("table")
    stream_ms = _epoch_ms(
        stream[pipeline.stream.event_time], pipeline.stream.fields[pipeline.stream.event_time]
    )
    table_ms = _epoch_ms(
        table[pipeline.table.version_time], pipeline.table.fields[pipeline.table.version_time]
    )
    fields = [
        (stream[source] if source else stream_ms).alias(name)
        for (name, _), source in zip(layout.stream.columns, layout.stream.sources, strict=True)
    ]
    return parsed.select(
        kind.alias("kind"),
        F.when(kind == "stream", stream[pipeline.stream.join_on])
        .otherwise(F.col("table_key"))
        .alias("join_key"),
        F.when(kind == "stream", stream_ms)
        .when(kind == "table", table_ms)
        .when(kind == "tombstone", F.col("timestamp_ms"))
        .alias("event_ms"),
        "timestamp_ms",
        "partition",
        "offset",
        F.when(kind == "stream", F.struct(*fields)).alias("stream"),
        F.when(
            kind == "table",
            F.struct(*[table[name].alias(name) for name, _ in layout.table.columns]),
        ).alias("table"),
        "dead_key",
        "dead_letter",
    )
