"""The input contract and the column layouts shared by the parser, the stateful processor, the
outputs and the ``board_detail`` table.

A pipeline's :class:`Contract` is its declaration's fields as the parser reads them (any
declared type); :data:`BOARD_DETAIL` is the shipped ``board_detail`` pipeline's
(boardstream/pipelines/declarations/), its sides :data:`BOARD_FIELDS` and :data:`MEMBER_FIELDS`:
what :mod:`boardstream.joins.parse` accepts (anything else is a dead letter naming the field and
the problem), and what the table's columns are sized from (:data:`BOARD_ID_MAX_CHARS`), so a
record the join accepts is one the table can hold. The processor's state and output are
tuples/rows in exactly the orders below, written once here and turned into Spark DDL by
:func:`ddl`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from boardstream.pipelines import (
    Boolean,
    Date,
    Decimal,
    Double,
    FieldType,
    Int64,
    Pipeline,
    Text,
    Timestamp,
    shipped,
)

TEXT, INT64, TIMESTAMP = "text", "int64", "timestamp"
DOUBLE, DECIMAL, BOOLEAN, DATE = "double", "decimal", "boolean", "date"
# PostgreSQL's text types cannot hold U+0000, so no text field may contain it.
FORBIDDEN_CHAR = "\u0000"


@dataclass(frozen=True)
class Field:
    """One field of a JSON value, as the parser reads it. ``text``: a JSON string (no U+0000),
    ``min_chars`` to ``max_chars`` code points; ``int64``: a JSON integer literal (no quotes,
    fraction or exponent) from -2**63 to 2**63 - 1 (an epoch timestamp too); ``timestamp``: a
    JSON string Spark reads as a timestamp (ISO 8601); ``date``: a JSON string ``YYYY-MM-DD``;
    ``boolean``: ``true`` or ``false``; ``double``: a JSON number, read as the nearest double;
    ``decimal``: a JSON number without exponent that fits ``precision`` digits, ``scale`` of
    them after the point, without rounding. An optional field may be absent or null; unknown
    fields are ignored."""

    name: str
    kind: str
    required: bool
    min_chars: int = 0
    max_chars: int | None = None
    precision: int | None = None
    scale: int = 0


def field(name: str, declared: FieldType) -> Field:
    """The parser's view of a declared field: an epoch timestamp is a JSON integer to it."""
    required = declared.required
    match declared:
        case Text(min_chars=min_chars, max_chars=max_chars):
            return Field(name, TEXT, required, min_chars, max_chars)
        case Int64() | Timestamp(format="epoch_ms" | "epoch_us"):
            return Field(name, INT64, required)
        case Timestamp():
            return Field(name, TIMESTAMP, required)
        case Decimal(precision=precision, scale=scale):
            return Field(name, DECIMAL, required, precision=precision, scale=scale)
        case Double():
            return Field(name, DOUBLE, required)
        case Boolean():
            return Field(name, BOOLEAN, required)
        case Date():
            return Field(name, DATE, required)
    raise TypeError(f"{name}: no parser field for {declared!r}")  # a type added, not here


def plural(label: str) -> str:
    """``boards`` of ``board``; a label already plural (a topic ``orders``) as it is."""
    return label if label.endswith("s") else f"{label}s"


def typed_as(field: Field) -> str:
    """The Spark type a valid value of ``field`` is held as: the JSON value's own, nothing
    converted but a date (an ISO timestamp stays its text, an epoch timestamp its integer)."""
    return {
        INT64: "bigint",
        DOUBLE: "double",
        BOOLEAN: "boolean",
        DATE: "date",
        DECIMAL: f"decimal({field.precision},{field.scale})",
    }.get(field.kind, "string")


def contract(declared: Mapping[str, FieldType]) -> tuple[Field, ...]:
    """The parser's contract for a declaration's fields, in their order."""
    return tuple(field(name, kind) for name, kind in declared.items())


@dataclass(frozen=True)
class Contract:
    """What the parser holds a pipeline's records to: each side's fields, the stream field a
    stream record's Kafka key must equal (``stream_id``, when it has a key), the table field
    that must equal a table record's key (``table_key``), and the words its dead letters call
    each side's records by (the declared topics: ``board``, ``member``)."""

    stream: tuple[Field, ...]
    table: tuple[Field, ...]
    stream_id: str
    table_key: str
    stream_label: str
    table_label: str

    @classmethod
    def of(cls, pipeline: Pipeline) -> Contract:
        return cls(
            contract(pipeline.stream.fields),
            contract(pipeline.table.fields),
            pipeline.stream.id,
            pipeline.table.key,
            pipeline.stream.topic,
            pipeline.table.topic,
        )

    def stream_field(self, name: str) -> Field:
        return next(field for field in self.stream if field.name == name)

    def table_field(self, name: str) -> Field:
        return next(field for field in self.table if field.name == name)


_BOARD_DETAIL = shipped("board_detail")
BOARD_DETAIL = Contract.of(_BOARD_DETAIL)
BOARD_FIELDS = BOARD_DETAIL.stream
MEMBER_FIELDS = BOARD_DETAIL.table
# Text the table stores as VARCHAR(n) (PostgreSQL counts characters, i.e. code points): a longer
# id must be stopped at the join, or the sink fails on it.
BOARD_ID_MAX_CHARS = _BOARD_DETAIL.stream.fields[_BOARD_DETAIL.stream.id].max_chars

# One parsed, valid input record of either topic, as the processor receives it.
INPUT = (
    ("kind", "string"),  # "member", "tombstone" or "board"
    ("member_id", "bigint"),
    ("event_ms", "bigint"),  # board created_ts; member modified_at; tombstone Kafka timestamp
    ("timestamp_ms", "bigint"),  # Kafka record timestamp: the order records are applied in
    ("partition", "int"),
    ("offset", "bigint"),
    ("board_id", "string"),
    ("title", "string"),
    ("body", "string"),
    ("created_ts", "bigint"),
    ("nickname", "string"),
    ("city", "string"),
    ("phone", "string"),
    ("created_at", "string"),
    ("modified_at", "string"),
)

# A member version: the profile plus where it came from.
MEMBER = (
    ("nickname", "string"),
    ("city", "string"),
    ("phone", "string"),
    ("created_at", "string"),
    ("modified_at", "string"),
    ("valid_from_ms", "bigint"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("deleted", "boolean"),
)

# A board waiting for its member.
PENDING = (
    ("board_id", "string"),
    ("title", "string"),
    ("body", "string"),
    ("created_ts", "bigint"),
    ("created_at", "string"),
    ("modified_at", "string"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("timestamp_ms", "bigint"),
    ("arrived_ms", "bigint"),
)

# What the processor emits; ``outcome`` routes it to board-detail or board-unmatched.
OUTPUT = (
    ("outcome", "string"),  # "joined" or "unmatched"
    ("reason", "string"),  # for unmatched: member_missing, member_deleted, pending_overflow
    ("board_id", "string"),
    ("member_id", "bigint"),
    ("nickname", "string"),
    ("city", "string"),
    ("phone", "string"),
    ("title", "string"),
    ("body", "string"),
    ("created_ts", "bigint"),
    ("created_at", "string"),
    ("modified_at", "string"),
    ("member_modified_at", "string"),
    ("board_partition", "int"),
    ("board_offset", "bigint"),
    ("board_timestamp_ms", "bigint"),
    ("member_partition", "int"),
    ("member_offset", "bigint"),
)


def ddl(columns: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"`{name}` {kind}" for name, kind in columns)


def names(columns: tuple[tuple[str, str], ...]) -> list[str]:
    return [name for name, _ in columns]
