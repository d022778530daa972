"""A pipeline's join rows, derived from its declaration: what the JVM operator receives, keeps
in its two state variables per table key, and emits.

- **routed**: a valid record's ``kind`` (``stream``, ``table``, ``tombstone``, ``tick``), its
  ``join_key`` (the stream record's ``join_on``, the table record's key), ``event_ms``,
  ``timestamp_ms``, ``partition``, ``offset``, and its fields in a struct per side, as the
  state keeps them; then a dead letter's key and envelope.
- **state**: a table row's versions (its fields but the key, then ``valid_from_ms``,
  ``partition``, ``offset``, ``deleted``) and the stream records waiting for it (their fields but
  ``join_on``, the id under the sink's key column, then ``partition``, ``offset``,
  ``timestamp_ms``, ``arrived_ms``). An event time not in epoch milliseconds is kept beside them
  as ``<field>_ms``. For the shipped pipeline these are the layouts its checkpoints hold.
- **output**: ``outcome``, ``reason``, then :meth:`Pipeline.joined_columns` (the sink's columns
  and the stream record's Kafka timestamp), then the dead letter's key and envelope; each joined
  column is read from the join key, a field of either side, or a record's position
  (:attr:`JoinLayout.plan`, which the JVM follows).
"""

from __future__ import annotations

from dataclasses import dataclass

from boardstream.joins import schema
from boardstream.pipelines import ROWTIME, Pipeline, Timestamp

Columns = tuple[tuple[str, str], ...]
VERSION_BOOKKEEPING: Columns = (
    ("valid_from_ms", "bigint"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("deleted", "boolean"),
)
WAITING_BOOKKEEPING: Columns = (
    ("partition", "int"),
    ("offset", "bigint"),
    ("timestamp_ms", "bigint"),
    ("arrived_ms", "bigint"),
)
DEAD: Columns = (("dead_key", "string"), ("dead_letter", "string"))
_POSITION_PLAN = {"ROWPARTITION": "partition", "ROWOFFSET": "offset", ROWTIME: "timestamp"}
_POSITION_TYPES = {"ROWPARTITION": "int", "ROWOFFSET": "bigint", ROWTIME: "bigint"}


@dataclass(frozen=True)
class Side:
    """One side's fields as the state keeps them: ``(column, spark type)`` each, and the
    declared field each column holds (None: the event time in milliseconds, computed)."""

    columns: Columns
    sources: tuple[str | None, ...]

    def index(self, field: str) -> int:
        return self.sources.index(field)


@dataclass(frozen=True)
class JoinLayout:
    key_type: str
    # The output's column holding the stream record's id: the Kafka key of what the join writes.
    id_column: str
    stream: Side
    table: Side
    # The waiting record's column holding its event time in epoch milliseconds.
    event_index: int
    output: Columns
    # Per joined column: ``key``, ``stream:<i>`` or ``table:<i>`` (a column of that side's
    # state fields), or ``<side>.partition``, ``.offset``, ``stream.timestamp``.
    plan: tuple[str, ...]

    @classmethod
    def of(cls, pipeline: Pipeline) -> JoinLayout:
        contract = schema.Contract.of(pipeline)
        stream_id = pipeline.stream.id
        key_column = pipeline.sink.column_of(f"stream.{stream_id}")
        assert key_column is not None  # the model requires it: the table's primary key
        stream_fields = [f for f in contract.stream if f.name != pipeline.stream.join_on]
        stream_columns = [
            (key_column if f.name == stream_id else f.name, schema.typed_as(f))
            for f in stream_fields
        ]
        sources: list[str | None] = [f.name for f in stream_fields]
        event = pipeline.stream.fields[pipeline.stream.event_time]
        if isinstance(event, Timestamp) and event.format == "epoch_ms":
            event_index = sources.index(pipeline.stream.event_time)
        else:
            names = {name for name, _ in stream_columns}
            name = f"{pipeline.stream.event_time}_ms"
            while name in names:
                name += "_"
            stream_columns.append((name, "bigint"))
            sources.append(None)
            event_index = len(sources) - 1
        stream = Side(tuple(stream_columns), tuple(sources))
        table_fields = [f for f in contract.table if f.name != pipeline.table.key]
        table = Side(
            tuple((f.name, schema.typed_as(f)) for f in table_fields),
            tuple(f.name for f in table_fields),
        )
        key_type = schema.typed_as(contract.table_field(pipeline.table.key))
        keys = {f"stream.{pipeline.stream.join_on}", f"table.{pipeline.table.key}"}
        output, plan = [], []
        for column, source in pipeline.joined_columns().items():
            side, _, name = source.partition(".")
            if name in _POSITION_PLAN:
                plan.append(f"{side}.{_POSITION_PLAN[name]}")
                output.append((column, _POSITION_TYPES[name]))
            elif source in keys:
                plan.append("key")
                output.append((column, key_type))
            else:
                held = stream if side == "stream" else table
                i = held.index(name)
                plan.append(f"{side}:{i}")
                output.append((column, held.columns[i][1]))
        columns = (("outcome", "string"), ("reason", "string"), *output, *DEAD)
        return cls(key_type, key_column, stream, table, event_index, columns, tuple(plan))

    @property
    def routed(self) -> Columns:
        return (
            ("kind", "string"),
            ("join_key", self.key_type),
            ("event_ms", "bigint"),
            ("timestamp_ms", "bigint"),
            ("partition", "int"),
            ("offset", "bigint"),
            ("stream", struct(self.stream.columns)),
            ("table", struct(self.table.columns)),
            *DEAD,
        )

    @property
    def version(self) -> Columns:
        return (*self.table.columns, *VERSION_BOOKKEEPING)

    @property
    def waiting(self) -> Columns:
        return (*self.stream.columns, *WAITING_BOOKKEEPING)

    @property
    def state_identity(self) -> dict[str, object]:
        """What the join's state holds, for its checkpoint's identity: a declaration whose
        fields changed (added, removed, renamed, retyped) cannot read a checkpoint of the old
        ones. Spark's own check compares types by position only, and would let a renamed or
        reordered field of one type read another's values."""
        return {
            "key": self.key_type,
            "version": [f"{name} {kind}" for name, kind in self.version],
            "waiting": [f"{name} {kind}" for name, kind in self.waiting],
        }

    @property
    def record(self) -> Columns:
        """The columns a joined or unmatched record's value holds (the output's but the
        outcome and the dead letter's), with their Spark types: what the sink parses."""
        return self.output[1 : -len(DEAD)]

    @property
    def payload(self) -> list[str]:
        return [name for name, _ in self.record]


def struct(columns: Columns) -> str:
    return "struct<" + ", ".join(f"`{name}`: {kind}" for name, kind in columns) + ">"
