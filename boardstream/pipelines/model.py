"""One pipeline, as its declaration says it: a stream joined with a table, without loss.

A stream record waits in the join's state for its table row, up to ``join.grace``; it leaves
joined, unmatched (with a reason) or, if it breaks its fields' contract, as a dead letter, and
reconciliation proves each source position reached exactly one of those. The join's parts are
named as ksqlDB names them (a stream, a table joined on its key, the Kafka record's
ROWPARTITION and ROWOFFSET) and its waiting as Quix Streams' lookup buffer does (``grace``,
``max_buffered_per_key``); docs/PIPELINES.md is the user's page.

What a declaration leaves out is derived here, once, when it is read (the outputs' topics from
the pipeline's name, the sink's position columns from their source), so every reader of a
pipeline, ``pipelines show`` included, sees the same resolved declaration.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, model_validator

from boardstream.durations import parse_ms
from boardstream.pipelines.fields import KEY_TYPES, FieldType, Strict
from boardstream.pipelines.names import (
    IDENTIFIER,
    Duration,
    Identifier,
    PipelineName,
    Topic,
    colliding,
)
from boardstream.pipelines.problems import Problem

JoinMode = Literal["latest", "as-of"]
SIDES = ("stream", "table")
# ksqlDB's pseudo columns: where a record was read from. Every sink keeps all six, since
# reconciliation proves each row against the records it names, and the upsert orders a key's
# rows by the joined record's position.
POSITIONS = {"ROWPARTITION": "partition", "ROWOFFSET": "offset"}
POSITION_SIDES = (*SIDES, "joined")
# The sink's own column: when the row was written.
LOADED_AT = "loaded_at"
# ksqlDB's pseudo column for a record's Kafka timestamp: the joined record carries the stream
# record's (the order the join applied it in), the sink does not.
ROWTIME = "ROWTIME"
_SOURCE = (
    rf"^(({'|'.join(SIDES)})\.{IDENTIFIER[1:-1]}"
    rf"|({'|'.join(POSITION_SIDES)})\.({'|'.join(POSITIONS)}))$"
)


def _source(text: str) -> str:
    if not re.match(_SOURCE, text):
        raise ValueError(
            f"expected stream.FIELD, table.FIELD or a position ({', '.join(_positions())}), "
            f"got {text!r}"
        )
    return text


Source = Annotated[str, AfterValidator(_source), Field(json_schema_extra={"pattern": _SOURCE})]
Fields = Annotated[dict[Identifier, FieldType], Field(min_length=1)]


def _positions() -> list[str]:
    return [f"{side}.{position}" for side in POSITION_SIDES for position in POSITIONS]


def _optional_in_schema(*names: str) -> Callable[[dict[str, Any]], None]:
    """The JSON Schema of a model whose keys ``names`` (all, if none) the reader derives when
    they are left out: an editor must not ask for them."""

    def edit(schema: dict[str, Any]) -> None:
        required = [name for name in schema.get("required", []) if names and name not in names]
        schema.pop("required", None)
        if required:
            schema["required"] = required

    return edit


def _named(fields: dict[str, FieldType], key: str, name: str, kinds: tuple[str, ...]) -> None:
    """``key`` names ``name``, which must be one of ``fields``, required, of one of ``kinds``."""
    if name not in fields:
        raise Problem(f"{name} is not among the fields ({', '.join(fields)})", key)
    field = fields[name]
    if field.type not in kinds:
        raise Problem(f"{name} is {field.type}; it must be {' or '.join(kinds)}", key)
    if not field.required:
        raise Problem(f"{name} must be a required field: every record needs one", key)


class Stream(Strict):
    """The stream: each record is joined with the table row its ``join_on`` field names. Its
    Kafka key, when it has one, must equal its ``id``."""

    topic: Topic
    id: Identifier = Field(description="the field each record is known by: the sink's key")
    join_on: Identifier = Field(description="the field holding the key of the record's table row")
    event_time: Identifier = Field(
        description="the timestamp field an as-of join finds the table row's version by"
    )
    fields: Fields

    @model_validator(mode="after")
    def _names_are_fields(self) -> Stream:
        _named(self.fields, "id", self.id, KEY_TYPES)
        _named(self.fields, "join_on", self.join_on, KEY_TYPES)
        _named(self.fields, "event_time", self.event_time, ("timestamp",))
        return self


class Table(Strict):
    """The table, a compacted topic: a record is a row's newest version under its Kafka key,
    which must equal its ``key`` field; a record with a null value (a tombstone) deletes the
    row."""

    topic: Topic
    key: Identifier = Field(description="the field holding the row's key (its Kafka key)")
    version_time: Identifier = Field(
        description="the timestamp field a version is valid from (as-of joins)"
    )
    fields: Fields

    @model_validator(mode="after")
    def _names_are_fields(self) -> Table:
        _named(self.fields, "key", self.key, KEY_TYPES)
        _named(self.fields, "version_time", self.version_time, ("timestamp",))
        return self


class Join(Strict):
    """How a stream record meets its row: the row current when it is processed (``latest``) or
    the version valid at its event time (``as-of``), and how long and how many may wait."""

    mode: JoinMode = "latest"
    grace: Duration = Field(
        default="10m",
        description="how long a stream record waits for its table row before it leaves "
        "unmatched (member_missing, member_deleted)",
    )
    max_buffered_per_key: int = Field(
        default=10_000,
        ge=1,
        description="stream records that may wait for one table key; past it the oldest leaves "
        "unmatched (pending_overflow)",
    )
    history_retention: Duration = Field(
        default="7d", description="as-of: how long a row's older versions are kept"
    )
    deleted_retention: Duration = Field(
        default="7d", description="how long a deleted row is remembered as deleted"
    )

    @property
    def grace_ms(self) -> int:
        return parse_ms(self.grace)

    @property
    def history_retention_ms(self) -> int:
        return parse_ms(self.history_retention)

    @property
    def deleted_retention_ms(self) -> int:
        return parse_ms(self.deleted_retention)


class Outputs(Strict):
    """The topics the join writes, each ``<name>-<part>`` unless given."""

    model_config = ConfigDict(json_schema_extra=_optional_in_schema())

    joined: Topic = Field(description="stream records joined with their row")
    unmatched: Topic = Field(description="stream records whose row never came, with a reason")
    dead_letters: Topic = Field(description="records that broke their fields' contract")
    tick: Topic = Field(description="the join's own: a record per run fires expired waits")

    @classmethod
    def derived(cls, name: str) -> dict[str, str]:
        suffixes = {"joined": "joined", "unmatched": "unmatched", "dead_letters": "dlq"}
        return {key: f"{name}-{suffix}" for key, suffix in suffixes.items()} | {
            "tick": f"{name}-join-tick"
        }


class Sink(Strict):
    """The table the joined records are upserted into, keyed by the stream's ``id``: the
    fields it keeps, under their column names (``column: stream.FIELD``); a field not named is
    not kept. The six positions (stream, table and joined ROWPARTITION and ROWOFFSET) are
    always kept, as ``<side>_partition`` and ``<side>_offset`` unless named; ``loaded_at`` is
    added."""

    table: Identifier
    columns: dict[Identifier, Source] = Field(min_length=1)

    def column_of(self, *sources: str) -> str | None:
        """The column that keeps the first of ``sources`` it keeps (``stream.id``,
        ``joined.ROWOFFSET``...), or None; a source kept twice, by its first column."""
        kept: dict[str, str] = {}
        for column, source in self.columns.items():
            kept.setdefault(source, column)
        return next((kept[source] for source in sources if source in kept), None)

    @classmethod
    def derived_positions(cls, columns: dict[str, str]) -> dict[str, str]:
        """The position columns ``columns`` does not name, under their default names."""
        named = {source for source in columns.values() if isinstance(source, str)}
        return {
            f"{side}_{suffix}": f"{side}.{position}"
            for side in POSITION_SIDES
            for position, suffix in POSITIONS.items()
            if f"{side}.{position}" not in named and f"{side}_{suffix}" not in columns
        }


class Reconcile(Strict):
    """What reconciliation allows this pipeline."""

    stall_after: Duration = Field(
        default="20m", description="input waiting longer than this is a stalled job"
    )
    watch_rows: int = Field(
        default=500_000,
        ge=1,
        description="sink rows an incremental run re-hashes: a larger table is watched in "
        "slices of this many rows, one per run",
    )


class Slo(Strict):
    """The live streams' service level (Pipeline health)."""

    max_batch_age: Duration = Field(
        default="20m", description="a stream's last batch (or idle heartbeat) at most this old"
    )
    max_lag: int = Field(
        default=100_000, ge=0, description="offsets a stream's last batch may be behind"
    )

    @property
    def max_batch_age_ms(self) -> int:
        return parse_ms(self.max_batch_age)


class Pipeline(Strict):
    """A stream joined with a table without loss, its outputs, its sink table and its proof."""

    model_config = ConfigDict(json_schema_extra=_optional_in_schema("outputs"))

    name: PipelineName
    description: str = ""
    stream: Stream
    table: Table
    join: Join = Join()
    outputs: Outputs
    sink: Sink
    reconcile: Reconcile = Reconcile()
    slo: Slo = Slo()

    @model_validator(mode="before")
    @classmethod
    def _derive(cls, data: Any) -> Any:
        """Fill in the outputs' topics and the sink's position columns left out."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        outputs = data.get("outputs", {})
        if isinstance(data.get("name"), str) and isinstance(outputs, dict):
            data["outputs"] = Outputs.derived(data["name"]) | outputs
        sink = data.get("sink")
        if isinstance(sink, dict) and isinstance(sink.get("columns"), dict):
            columns = sink["columns"]
            data["sink"] = sink | {"columns": columns | Sink.derived_positions(columns)}
        return data

    @model_validator(mode="after")
    def _parts_agree(self) -> Pipeline:
        self._topics_apart()
        key = self.table.fields[self.table.key]
        on = self.stream.fields[self.stream.join_on]
        if on.type != key.type:
            raise Problem(
                f"{self.stream.join_on} is {on.type} but the table's key "
                f"{self.table.key} is {key.type}",
                "stream",
                "join_on",
            )
        self._shared_fields_agree()
        self._sink_columns_resolve()
        rowtime = self.rowtime_column
        if rowtime in self.sink.columns:
            raise Problem(
                f"{rowtime} is the joined records' column for stream.{ROWTIME}",
                "sink",
                "columns",
                rowtime,
            )
        return self

    @property
    def rowtime_column(self) -> str:
        """The joined records' column of the stream record's Kafka timestamp: named after the
        stream's offset column (``board_offset``: ``board_timestamp_ms``)."""
        offset = self.sink.column_of("stream.ROWOFFSET")
        assert offset is not None  # every sink keeps the six positions (_sink_columns_resolve)
        return f"{offset.removesuffix('_offset')}_timestamp_ms"

    @property
    def join_column(self) -> str | None:
        """The sink's (and the outputs') column of the join key: ``stream.join_on``'s, else
        ``table.key``'s (equal in every joined record); a valid declaration keeps one."""
        return self.sink.column_of(f"stream.{self.stream.join_on}", f"table.{self.table.key}")

    def joined_columns(self) -> dict[str, str]:
        """The layout of the records the join writes (joined and unmatched): the sink's
        columns but the joined record's own position, which no record can carry, with the
        stream record's Kafka timestamp after its offset. What the table holds is what the
        topic says."""
        columns: dict[str, str] = {}
        for column, source in self.sink.columns.items():
            if source.startswith("joined."):
                continue
            columns[column] = source
            if source == "stream.ROWOFFSET":
                columns[self.rowtime_column] = f"stream.{ROWTIME}"
        return columns

    def _shared_fields_agree(self) -> None:
        for name, field in self.table.fields.items():
            other = self.stream.fields.get(name)
            if other is not None and other.json_form != field.json_form:
                raise Problem(
                    f"{field.type} ({field.json_form}) here but {other.type} "
                    f"({other.json_form}) in the stream: a field both name is read once per "
                    "record, in one JSON form",
                    "table",
                    "fields",
                    name,
                )

    def _topics_apart(self) -> None:
        seen: dict[str, tuple[str, str]] = {}
        named = [("stream.topic", self.stream.topic), ("table.topic", self.table.topic)]
        for where, topic in [*named, *((f"outputs.{part}", topic) for part, topic in self.outputs)]:
            other, other_topic = seen.setdefault(colliding(topic), (where, topic))
            if other != where:
                same = "" if other_topic == topic else f" ({other_topic}: Kafka takes . for _)"
                raise Problem(f"{topic} is also {other}{same}", *where.split("."))

    def _sink_columns_resolve(self) -> None:
        kept = {}
        for column, source in self.sink.columns.items():
            side, _, name = source.partition(".")
            if name not in POSITIONS:
                fields = self.stream.fields if side == "stream" else self.table.fields
                if name not in fields:
                    raise Problem(
                        f"{source}: {name} is not among the {side}'s fields",
                        "sink",
                        "columns",
                        column,
                    )
            kept.setdefault(source, column)
        if LOADED_AT in self.sink.columns:
            raise Problem(f"{LOADED_AT} is the sink's own column", "sink", "columns", LOADED_AT)
        needed = {f"stream.{self.stream.id}": "the table's primary key"} | {
            position: "reconciliation proves each row by it" for position in _positions()
        }
        for source, why in needed.items():
            if source not in kept:
                raise Problem(f"keeps no column for {source} ({why})", "sink", "columns")
        if self.join_column is None:
            raise Problem(
                f"keeps no column for stream.{self.stream.join_on} or table.{self.table.key} "
                "(reconciliation proves each joined record used its key's row by it)",
                "sink",
                "columns",
            )
