"""What a reconciliation run reads of a pipeline, derived from its declaration (issue #64): the
joined and unmatched records' layout, the columns a joined record and its table row must agree
on, and the fields whose digests tie a source record and a table version to every output made
of them.

- **record**: the columns of a joined or unmatched record (the join's :attr:`JoinLayout.record`).
- **content**: the sink's columns but the joined record's own position, with their Spark types:
  what a joined record and the row loaded from it must share.
- **stream digest**: the stream's fields the sink keeps, under their column names, the id read
  from the Kafka key: the same digest for a source record and every output of it.
- **table digest**: the table's key and the table's fields the sink keeps, under their field
  names, the key read from the Kafka key: the same for a table version and every joined record
  that used it.

Digests are the ledger's: for the shipped pipeline these layouts are the ones its digests were
always taken over (pinned in tests/unit/reconcile/test_layout.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from boardstream.joins import schema
from boardstream.joins.layout import Columns, JoinLayout
from boardstream.pipelines import POSITIONS, Pipeline

# The checks' names for a stream record's id and the table's key, whatever a pipeline calls them
# (:attr:`ReconcileLayout.roles`): the shipped pipeline's, which its ledgers were written in.
ID_ROLE, KEY_ROLE = "board_id", "member_id"
# A digest's parts: (its name in the digest, the record's field or column it is read from).
Parts = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ReconcileLayout:
    record: Columns
    content: Columns
    # The joined record's own position, as the table keeps it: (partition, offset) columns.
    joined_position: tuple[str, str]
    # The outputs' columns naming the stream record's and the table version's positions.
    stream_position: tuple[str, str]
    table_position: tuple[str, str]
    id_column: str  # the sink's (and the outputs') column of the stream record's id
    key_type: str  # the Spark type of the table's key (and the stream's join_on)
    # The stream's fields the digest reads from a source record (the id comes from the key).
    stream_fields: Columns
    stream_in_source: Parts  # digest name, source record field (the id: its Kafka key)
    stream_in_output: Parts  # digest name, output column
    table_key: str  # the table's key field: its digest name
    table_key_column: str  # the outputs' column holding it
    table_fields: Columns  # the table's fields the digest reads from a table record
    table_in_output: Parts  # digest name (the table's field), output column

    @classmethod
    def of(cls, pipeline: Pipeline) -> ReconcileLayout:
        join = JoinLayout.of(pipeline)
        types = dict(join.record)
        sink = pipeline.sink
        joined, stream_position, table_position = (
            _position(pipeline, side) for side in ("joined", "stream", "table")
        )
        contract = schema.Contract.of(pipeline)
        stream_in_output, stream_in_source, stream_fields = [], [], []
        table_in_output, table_fields = [], []
        for column, source in sink.columns.items():
            side, _, name = source.partition(".")
            if name in POSITIONS or side == "joined":
                continue
            if side == "stream":
                stream_in_output.append((column, column))
                stream_in_source.append((column, name))
                if name != pipeline.stream.id:
                    stream_fields.append((name, schema.typed_as(contract.stream_field(name))))
            elif name != pipeline.table.key:
                table_in_output.append((name, column))
                table_fields.append((name, schema.typed_as(contract.table_field(name))))
        key_column = pipeline.join_column
        assert key_column is not None  # the model requires one (Pipeline._sink_columns_resolve)
        content = tuple((c, types[c]) for c in sink.columns if c not in joined)
        return cls(
            record=join.record,
            content=content,
            joined_position=joined,
            stream_position=stream_position,
            table_position=table_position,
            id_column=join.id_column,
            key_type=join.key_type,
            stream_fields=tuple(stream_fields),
            stream_in_source=tuple(stream_in_source),
            stream_in_output=tuple(stream_in_output),
            table_key=pipeline.table.key,
            table_key_column=key_column,
            table_fields=tuple(table_fields),
            table_in_output=tuple(table_in_output),
        )

    @property
    def content_names(self) -> list[str]:
        return [name for name, _ in self.content]

    @property
    def roles(self) -> dict[str, str]:
        """The table's columns the checks read by role: the stream record's id and the table's
        key (:data:`ID_ROLE`, :data:`KEY_ROLE`), and the three records' positions (``source_``,
        ``member_`` and ``detail_partition``, ``_offset``), each under its column's name."""
        named = {self.id_column: ID_ROLE, self.table_key_column: KEY_ROLE}
        for (partition, offset), role in (
            (self.stream_position, "source"),
            (self.table_position, "member"),
            (self.joined_position, "detail"),
        ):
            named |= {partition: f"{role}_partition", offset: f"{role}_offset"}
        return named

    @property
    def types(self) -> dict[str, str]:
        """Every table column's Spark type: the content and the joined record's position."""
        partition, offset = self.joined_position
        return {**dict(self.content), partition: "int", offset: "bigint"}


def _position(pipeline: Pipeline, side: str) -> tuple[str, str]:
    """The sink's columns holding ``side``'s record position (partition, offset)."""
    columns = pipeline.sink.columns
    found = tuple(c for p in POSITIONS for c, source in columns.items() if source == f"{side}.{p}")
    assert len(found) == 2  # the model keeps every position (Pipeline._sink_columns_resolve)
    return found[0], found[1]
