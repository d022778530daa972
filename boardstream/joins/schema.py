"""The input contract and the column layouts shared by the parser, the stateful processor, the
outputs and the ``board_detail`` table.

:data:`BOARD_FIELDS` and :data:`MEMBER_FIELDS` are the contract of a record's JSON value, read
from the shipped ``board_detail`` declaration (boardstream/pipelines/declarations/): what
:mod:`boardstream.joins.parse` accepts (anything else is a dead letter naming the field and the
problem), and what the table's columns are sized from (:data:`BOARD_ID_MAX_CHARS`), so a record
the join accepts is one the table can hold. The processor's state and output are tuples/rows in
exactly the orders below, written once here and turned into Spark DDL by :func:`ddl`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from boardstream.errors import BoardstreamError
from boardstream.pipelines import FieldType, Int64, Text, Timestamp, shipped

TEXT, INT64, TIMESTAMP = "text", "int64", "timestamp"
# PostgreSQL's text types cannot hold U+0000, so no text field may contain it.
FORBIDDEN_CHAR = "\u0000"


@dataclass(frozen=True)
class Field:
    """One field of a JSON value. ``text``: a JSON string (no U+0000), ``min_chars`` to
    ``max_chars`` code points; ``int64``: a JSON integer literal (no quotes, fraction or
    exponent) from -2**63 to 2**63 - 1; ``timestamp``: a JSON string Spark reads as a timestamp
    (ISO 8601). An optional field may be absent or null; unknown fields are ignored."""

    name: str
    kind: str
    required: bool
    min_chars: int = 0
    max_chars: int | None = None


def contract(declared: Mapping[str, FieldType]) -> tuple[Field, ...]:
    """The parser's contract for a declaration's fields, in their order. An epoch timestamp
    is a JSON integer to the parser; the other types it does not parse yet."""
    contract = []
    for name, kind in declared.items():
        if isinstance(kind, Text):
            contract.append(Field(name, TEXT, kind.required, kind.min_chars, kind.max_chars))
        elif isinstance(kind, Int64) or (isinstance(kind, Timestamp) and kind.format != "iso8601"):
            contract.append(Field(name, INT64, kind.required))
        elif isinstance(kind, Timestamp):
            contract.append(Field(name, TIMESTAMP, kind.required))
        else:
            raise BoardstreamError(f"{name}: the join's parser does not read {kind.type} yet")
    return tuple(contract)


_BOARD_DETAIL = shipped("board_detail")
BOARD_FIELDS = contract(_BOARD_DETAIL.stream.fields)
MEMBER_FIELDS = contract(_BOARD_DETAIL.table.fields)
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
