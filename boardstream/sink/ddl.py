"""A pipeline's sink table, built from its declaration (``pipeline.sink``): the columns it
names, in its order, each typed from the field it keeps, so a record the join accepts is one
the table holds (a text's ``max_chars`` is its ``VARCHAR``; an unbounded text is ``TEXT``).

A value is stored as the joined record carries it, never converted: a timestamp stays in its
declared form (an ``epoch_ms`` or ``epoch_us`` integer is a ``BIGINT``, an ISO 8601 string a
``TEXT``), since reconciliation proves each row against its record's content, and an ISO
string's own offset would be lost in a ``TIMESTAMP WITH TIME ZONE``.

``NOT NULL`` is kept for what the sink itself relies on: the key (``stream.id``, the primary
key), the join column (``stream.join_on``, or ``table.key``, equal in every joined row: indexed,
a table row's records are found by it) and the joined record's own position (what the upsert
orders a key's rows by, read from the Kafka record, never absent). Every other column may be
null: the join's contract, not the table, says what a record must have.
"""

from __future__ import annotations

import sqlalchemy as sa

from boardstream.pipelines import (
    LOADED_AT,
    POSITIONS,
    Boolean,
    Date,
    Decimal,
    Double,
    FieldType,
    Int64,
    Pipeline,
    Text,
    Timestamp,
)

# A Kafka partition is an int32, an offset an int64.
_POSITION_TYPES: dict[str, type[sa.types.TypeEngine]] = {
    "ROWPARTITION": sa.Integer,
    "ROWOFFSET": sa.BigInteger,
}


def column_type(field: FieldType) -> sa.types.TypeEngine:
    """The column type that holds every value ``field`` accepts, as the record carries it."""
    match field:
        case Text(max_chars=None):
            return sa.Text()
        case Text(max_chars=max_chars):
            return sa.String(max_chars)
        case Int64() | Timestamp(format="epoch_ms" | "epoch_us"):
            return sa.BigInteger()
        case Timestamp():
            return sa.Text()
        case Double():
            return sa.Double()
        case Decimal(precision=precision, scale=scale):
            return sa.Numeric(precision, scale)
        case Boolean():
            return sa.Boolean()
        case Date():
            return sa.Date()
    raise TypeError(f"no column type for {field!r}")  # a type added to fields.py, not here


def kept_column(pipeline: Pipeline, source: str) -> str:
    """The column keeping ``source``, one the model requires every sink to keep (the stream's
    id, the six positions)."""
    column = pipeline.sink.column_of(source)
    assert column is not None, f"{pipeline.name}: {source}"
    return column


def key_column(pipeline: Pipeline) -> str:
    """The primary key's column: the one keeping ``stream.id``."""
    return kept_column(pipeline, f"stream.{pipeline.stream.id}")


def sink_table(pipeline: Pipeline, metadata: sa.MetaData | None = None) -> sa.Table:
    """``pipeline``'s sink table, in ``metadata`` (one of its own if None); on SQLite stored in
    key order (``WITHOUT ROWID``: boardstream.key_order)."""
    key = key_column(pipeline)
    joins = pipeline.join_column
    columns = []
    for column, source in pipeline.sink.columns.items():
        side, _, name = source.partition(".")
        if name in POSITIONS:
            kind = _POSITION_TYPES[name]()
            nullable = side != "joined"
        else:
            fields = pipeline.stream.fields if side == "stream" else pipeline.table.fields
            kind = column_type(fields[name])
            nullable = column != joins
        columns.append(
            sa.Column(
                column,
                kind,
                primary_key=column == key,
                nullable=nullable and column != key,
                index=column == joins,
            )
        )
    return sa.Table(
        pipeline.sink.table,
        metadata if metadata is not None else sa.MetaData(),
        *columns,
        sa.Column(LOADED_AT, sa.DateTime(timezone=True), server_default=sa.func.now()),
        sqlite_with_rowid=False,
    )
