"""The digest ledger of issue #22: a compact projection of every record a reconciliation has read,
so an incremental run can rebuild the checks' frames for the keys new data touches without
re-reading the topics from the beginning.

A pipeline's ledger (:class:`DigestLedger`) is its own six tables, named after it
(``orders_reconcile_source``), the table key's column typed as its declaration types the key.
Each table has the column names of its reader's frame (:mod:`.readers`), so a looked-up Arrow
table converts to the Spark schema the checks already read:

- ``reconcile_source``: ``readers.sources`` of the stream, by source position;
- ``reconcile_output``: the join's outputs (``holder`` joined, unmatched or dead_lettered), by
  the record's own position in its topic (``record_partition``, ``record_offset``; a joined
  record's ``detail_partition``/``detail_offset``), indexed by the source position they name and
  by the stream record's id;
- ``reconcile_member``: ``readers.members`` of the table, by position, indexed by its key;
- ``reconcile_refused``: positions the join or the sink dead-lettered that are not stream
  records;
- ``reconcile_cursor``: how far each topic partition has been read into the ledger;
- ``reconcile_unseen``: ranges of output records their topic deleted before any run read them
  (:mod:`.expired`).

Every method takes the caller's :class:`~sqlalchemy.engine.Connection` and never commits, so a
run's ledger writes and its verdict commit together or not at all. Writes are idempotent: a row
already present (an at-least-once replay of a ledger write) is skipped, never duplicated and
never an error. Lookups cost what their keys cost: the keys go in chunks of at most
:data:`CHUNK_PARAMETERS` bound parameters (SQLite's historical limit is 999) to a primary-key or
index range, never a scan of the table.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from boardstream import database, staging
from boardstream.errors import BoardstreamError
from boardstream.pipelines.names import store_table
from boardstream.reconcile.layout import ID_ROLE, KEY_ROLE
from boardstream.reconcile.target import DEAD_LETTERED, JOINED, UNMATCHED

log = logging.getLogger(__name__)

HOLDERS = (JOINED, UNMATCHED, DEAD_LETTERED)
CHUNK_PARAMETERS = 900  # bound parameters per lookup statement, under SQLite's 999
# PostgreSQL appends of at least this many rows go through COPY into a temporary table.
COPY_THRESHOLD = 1_000

# The table key's column type per Spark type of the key (a declaration's text or int64 key).
_KEY_TYPES: dict[str, type[sa.types.TypeEngine]] = {
    "string": sa.Text,
    "bigint": sa.BigInteger,
    "int": sa.Integer,
}


def _tables(metadata: sa.MetaData, pipeline: str, key: sa.types.TypeEngine) -> tuple[sa.Table, ...]:
    """A pipeline's six ledger tables, its table key typed as the declaration types it."""

    def named(part: str) -> str:
        return store_table(pipeline, part)

    source = sa.Table(
        named("reconcile_source"),
        metadata,
        sa.Column(ID_ROLE, sa.Text),
        sa.Column("source_partition", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("source_offset", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("board_digest", sa.BigInteger),
    )
    output = sa.Table(
        named("reconcile_output"),
        metadata,
        sa.Column("holder", sa.String(16), primary_key=True),
        sa.Column("record_partition", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("record_offset", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column(ID_ROLE, sa.Text, index=True),
        sa.Column(KEY_ROLE, key),
        sa.Column("source_partition", sa.Integer),
        sa.Column("source_offset", sa.BigInteger),
        sa.Column("digest", sa.BigInteger),
        sa.Column("board_digest", sa.BigInteger),
        sa.Column("member_partition", sa.Integer),
        sa.Column("member_offset", sa.BigInteger),
        sa.Column("member_digest", sa.BigInteger),
        sa.Index(named("reconcile_output_source"), "source_partition", "source_offset"),
    )
    member = sa.Table(
        named("reconcile_member"),
        metadata,
        sa.Column(KEY_ROLE, key, index=True),
        sa.Column("member_partition", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("member_offset", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("member_digest", sa.BigInteger),
        sa.Column("tombstone", sa.Boolean, nullable=False),
    )
    refused = sa.Table(
        named("reconcile_refused"),
        metadata,
        sa.Column("source_topic", sa.Text, primary_key=True),
        sa.Column("source_partition", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("source_offset", sa.BigInteger, primary_key=True, autoincrement=False),
    )
    cursor = sa.Table(
        named("reconcile_cursor"),
        metadata,
        sa.Column("topic", sa.Text, primary_key=True),
        sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("end_offset", sa.BigInteger, nullable=False),
    )
    unseen = sa.Table(
        named("reconcile_unseen"),
        metadata,
        sa.Column("topic", sa.Text, primary_key=True),
        sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("from_offset", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("to_offset", sa.BigInteger, nullable=False),
    )
    return source, output, member, refused, cursor, unseen


_ARROW_TYPES: dict[type, pa.DataType] = {
    sa.Text: pa.string(),
    sa.String: pa.string(),
    sa.Integer: pa.int32(),
    sa.BigInteger: pa.int64(),
    sa.Boolean: pa.bool_(),
}
# A joined output as readers.details names it: its own position is detail_partition/offset.
DETAIL_NAMES = {"record_partition": "detail_partition", "record_offset": "detail_offset"}
DETAIL_NAMES_BACK = {detail: record for record, detail in DETAIL_NAMES.items()}
DETAIL_COLUMNS = (
    ID_ROLE,
    KEY_ROLE,
    "source_partition",
    "source_offset",
    "detail_partition",
    "detail_offset",
    "digest",
    "board_digest",
    "member_partition",
    "member_offset",
    "member_digest",
)


def _key(key_type: str) -> sa.types.TypeEngine:
    try:
        return _KEY_TYPES[key_type]()
    except KeyError:
        raise BoardstreamError(
            f"a table key of type {key_type} has no ledger column type (one of "
            f"{sorted(_KEY_TYPES)})"
        ) from None


def details_schema(key_type: str) -> pa.Schema:
    """``readers.details``' columns and Arrow types, the table key of ``key_type``."""
    output = _tables(sa.MetaData(), "any", _key(key_type))[1]
    return as_details(pa.Table.from_batches([], arrow_schema(output))).schema


def arrow_schema(table: sa.Table, names: Sequence[str] | None = None) -> pa.Schema:
    """The Arrow schema of ``table``'s columns ``names`` (all by default): text as string,
    Integer as int32, BigInteger as int64, Boolean as bool; the types Spark's readers use."""
    columns = [table.c[name] for name in names] if names else list(table.columns)
    return pa.schema([(c.name, _arrow_type(c.type)) for c in columns])


def _arrow_type(kind: sa.types.TypeEngine) -> pa.DataType:
    for sa_type, arrow in _ARROW_TYPES.items():
        if type(kind) is sa_type:
            return arrow
    raise BoardstreamError(f"no Arrow type for column type {kind!r}")


def conform(table: sa.Table, rows: pa.Table) -> pa.Table:
    """``rows`` with exactly ``table``'s columns in its order and Arrow types: a nullable
    column ``rows`` lacks is all nulls; a column the table does not have, a missing non-null
    column or a value that does not fit its type is an error, never silently dropped."""
    extra = set(rows.column_names) - set(table.c.keys())
    if extra:
        raise BoardstreamError(f"{table.name} has no columns {sorted(extra)}")
    schema = arrow_schema(table)
    columns = []
    for field in schema:
        if field.name in rows.column_names:
            columns.append(rows.column(field.name).cast(field.type))  # safe: overflow raises
        elif table.c[field.name].nullable:
            columns.append(pa.nulls(rows.num_rows, field.type))
        else:
            raise BoardstreamError(f"rows for {table.name} lack column {field.name}")
    return pa.Table.from_arrays(columns, schema=schema)


def as_details(rows: pa.Table) -> pa.Table:
    """Joined ``reconcile_output`` rows in ``readers.details``' columns and order."""
    renamed = rows.rename_columns([DETAIL_NAMES.get(n, n) for n in rows.column_names])
    return renamed.select(list(DETAIL_COLUMNS))


def _upsert(connection: Connection, table: sa.Table) -> Any:
    return database.upsert_insert(connection.dialect, table, "the digest ledger's writes")


def _copy(connection: Connection, table: sa.Table, rows: pa.Table) -> None:
    """PostgreSQL: COPY ``rows`` into a temporary copy of ``table`` (:func:`staging.copy_csv`),
    then insert what is not there yet. The temporary table lives until the transaction ends."""
    temporary = f"{table.name}_staging"
    names = ", ".join(rows.column_names)
    key = ", ".join(c.name for c in table.primary_key.columns)
    connection.exec_driver_sql(
        f"CREATE TEMPORARY TABLE IF NOT EXISTS {temporary} "
        f"(LIKE {table.name} INCLUDING DEFAULTS) ON COMMIT DROP"
    )
    connection.exec_driver_sql(f"TRUNCATE {temporary}")
    staging.copy_csv(connection, temporary, rows)
    connection.exec_driver_sql(
        f"INSERT INTO {table.name} ({names}) SELECT {names} FROM {temporary} "
        f"ON CONFLICT ({key}) DO NOTHING"
    )
    connection.exec_driver_sql(f"TRUNCATE {temporary}")


def _lookup(
    connection: Connection,
    table: sa.Table,
    key_columns: Sequence[str],
    keys: Iterable[Any],
) -> pa.Table:
    """The rows of ``table`` whose ``key_columns`` equal one of ``keys`` (tuples when there
    are several columns), ordered by key. The keys are deduplicated, sorted and grouped by
    all but their last column (a partition, a holder): each group is one equality on its
    leading columns and an ``IN`` list of its last, in chunks, an index range the planners
    of both databases use (row-value ``IN`` lists were 15x slower on SQLite,
    bench/digest_ledger.py)."""
    columns = [table.c[name] for name in key_columns]
    *leading, last = columns
    wide = bool(leading)
    wanted = sorted({tuple(k) if wide else (k,) for k in keys if _complete(k, wide)})
    per_chunk = CHUNK_PARAMETERS - len(leading)
    order = [*columns, *(c for c in table.primary_key.columns if c not in columns)]
    schema = arrow_schema(table)
    batches = []
    for prefix, group in itertools.groupby(wanted, key=lambda k: k[:-1]):
        values = [k[-1] for k in group]
        fixed = [column == value for column, value in zip(leading, prefix, strict=True)]
        for chunk in database.chunks(values, per_chunk):
            condition = sa.and_(*fixed, last.in_(chunk))
            statement = sa.select(table).where(condition).order_by(*order)
            batches += _batch(connection.execute(statement).all(), schema)
    return pa.Table.from_batches(batches, schema)


def _batch(rows: Sequence[Sequence[Any]], schema: pa.Schema) -> list[pa.RecordBatch]:
    """``rows`` (tuples in ``schema``'s column order) as one record batch, or none."""
    if not rows:
        return []
    columns = zip(*rows, strict=True)
    arrays = [pa.array(v, t) for v, t in zip(columns, schema.types, strict=True)]
    return [pa.record_batch(arrays, schema=schema)]


def _complete(key: Any, wide: bool) -> bool:
    """A key with no NULL in it: NULL matches nothing in SQL, so it is not looked up."""
    return all(part is not None for part in key) if wide else key is not None


@dataclass(frozen=True, eq=False)
class DigestLedger:
    """One pipeline's digest ledger (:func:`DigestLedger.of`): its tables, named after the
    pipeline, and the lock its runs' transactions hold."""

    pipeline: str
    metadata: sa.MetaData
    source_table: sa.Table
    output_table: sa.Table
    member_table: sa.Table
    refused_table: sa.Table
    cursor_table: sa.Table
    unseen_table: sa.Table

    @staticmethod
    @cache
    def of(pipeline: str, key_type: str) -> DigestLedger:
        """``pipeline``'s ledger, its table key a column of ``key_type`` (the key's Spark type);
        one object per pipeline, so its tables' metadata is one too."""
        metadata = sa.MetaData()
        return DigestLedger(pipeline, metadata, *_tables(metadata, pipeline, _key(key_type)))

    @property
    def lock_key(self) -> int:
        """The PostgreSQL advisory lock of this ledger's transactions: the pipeline name's
        64-bit hash, so one pipeline's runs never wait for another's."""
        digest = hashlib.blake2b(self.pipeline.encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big", signed=True)

    @property
    def _positions(self) -> dict[str, tuple[sa.Table, str, str]]:
        """Where each holder keeps a record's own position: table and position columns."""
        return {
            "source": (self.source_table, "source_partition", "source_offset"),
            "member": (self.member_table, "member_partition", "member_offset"),
            **{h: (self.output_table, "record_partition", "record_offset") for h in HOLDERS},
        }

    def create(self, engine: Engine) -> None:
        """Create the ledger's tables (and indexes) that do not exist yet."""
        self.metadata.create_all(engine)

    def _own(self, table: sa.Table) -> sa.Table:
        if table.metadata is not self.metadata:
            raise BoardstreamError(f"{table.name} is not a table of {self.pipeline}'s ledger")
        return table

    def outputs(self, holder: str, rows: pa.Table) -> pa.Table:
        """Rows of a reader's output frame as the output table rows of ``holder``: a joined
        record's ``detail_partition``/``detail_offset`` are its record position; the other holders'
        frames must carry ``record_partition``/``record_offset`` themselves."""
        if holder not in HOLDERS:
            raise BoardstreamError(f"holder must be one of {HOLDERS}, not {holder!r}")
        renamed = rows.rename_columns([DETAIL_NAMES_BACK.get(n, n) for n in rows.column_names])
        holders = pa.array([holder] * rows.num_rows, pa.string())
        return conform(self.output_table, renamed.append_column("holder", holders))

    def append(self, connection: Connection, table: sa.Table, rows: pa.Table) -> int:
        """Insert ``rows`` into a ledger table, skipping any whose primary key is present already
        (a replayed ledger write); returns how many rows were given. In the caller's transaction."""
        table = self._own(table)
        rows = conform(table, rows)
        if rows.num_rows == 0:
            return 0
        if connection.dialect.name == "postgresql" and rows.num_rows >= COPY_THRESHOLD:
            log.debug("digest ledger: %d rows to %s through COPY", rows.num_rows, table.name)
            _copy(connection, table, rows)
            return rows.num_rows
        log.debug("digest ledger: %d rows to %s", rows.num_rows, table.name)
        database.insert_rows(connection, table, rows, skip_present=True)
        return rows.num_rows

    def stage(self, engine: Engine, table: sa.Table, rows: pa.Table) -> sa.Table:
        """``rows`` for a ledger table staged ahead of the run's transaction (:mod:`.staging`),
        conformed as :func:`append` conforms them; :func:`append_staged` moves them in."""
        table = self._own(table)
        return staging.stage(engine, table, conform(table, rows))

    def append_staged(self, connection: Connection, staged: sa.Table, table: sa.Table) -> None:
        """The rows of ``staged`` (:func:`stage`) into their ledger table as :func:`append` adds
        them: a row whose primary key is present already is skipped. In the caller's transaction."""
        staging.move_in(connection, staged, self._own(table), skip_present=True)

    def sources_at(self, connection: Connection, positions: Iterable[tuple[int, int]]) -> pa.Table:
        """The ``board`` records at these source positions (``readers.sources`` columns)."""
        return _lookup(
            connection, self.source_table, ("source_partition", "source_offset"), positions
        )

    def outputs_at(self, connection: Connection, positions: Iterable[tuple[int, int]]) -> pa.Table:
        """Every output (each holder's) that names one of these source positions: the whole
        the output table row, holder and record position included."""
        return _lookup(
            connection, self.output_table, ("source_partition", "source_offset"), positions
        )

    def outputs_of(self, connection: Connection, board_ids: Iterable[str]) -> pa.Table:
        """The joined records of these boards, in ``readers.details`` columns."""
        # Filtered here, not in SQL: a condition on holder can lead the planner to the primary
        # key's prefix (every joined row) instead of the id's index.
        found = _lookup(connection, self.output_table, (ID_ROLE,), board_ids)
        return as_details(found.filter(pc.equal(found["holder"], "joined")))

    def details_at(
        self, connection: Connection, record_positions: Iterable[tuple[int, int]]
    ) -> pa.Table:
        """The joined records at these positions of the joined topic, in ``readers.details``
        columns."""
        found = _lookup(
            connection,
            self.output_table,
            ("holder", "record_partition", "record_offset"),
            (("joined", p, o) for p, o in record_positions),
        )
        return as_details(found)

    def members_at(self, connection: Connection, positions: Iterable[tuple[int, int]]) -> pa.Table:
        """The ``member`` records at these positions (``readers.members`` columns)."""
        return _lookup(
            connection, self.member_table, ("member_partition", "member_offset"), positions
        )

    def members_of(self, connection: Connection, member_ids: Iterable[int]) -> pa.Table:
        """Every version (tombstones too) of these members (``readers.members`` columns)."""
        return _lookup(connection, self.member_table, (KEY_ROLE,), member_ids)

    def refused_at(
        self, connection: Connection, source_topic: str, positions: Iterable[tuple[int, int]]
    ) -> pa.Table:
        """Which of these positions of ``source_topic`` the join or the sink dead-lettered."""
        return _lookup(
            connection,
            self.refused_table,
            ("source_topic", "source_partition", "source_offset"),
            ((source_topic, p, o) for p, o in positions),
        )

    def refused(self, connection: Connection) -> pa.Table:
        """Every position the join or the sink dead-lettered (``self.refused_table`` rows): few,
        as dead letters are bounded."""
        rows = connection.execute(
            sa.select(self.refused_table).order_by(*self.refused_table.primary_key)
        )
        return pa.Table.from_batches(
            _batch(rows.all(), arrow_schema(self.refused_table)), arrow_schema(self.refused_table)
        )

    def below(
        self, connection: Connection, topic_holder: str, earliest: dict[int, int]
    ) -> pa.Table:
        """The rows of ``topic_holder`` ('source', 'member' or an output holder) whose own record
        position lies below its partition's ``earliest`` offset: records retention or
        ``deleteRecords`` has removed since. A record at ``earliest`` is kept; a partition not in
        ``earliest`` is not looked at. One primary-key range per partition."""
        try:
            table, partition_name, offset_name = self._positions[topic_holder]
        except KeyError:
            raise BoardstreamError(
                f"topic_holder must be one of {sorted(self._positions)}, not {topic_holder!r}"
            ) from None
        partition, offset = table.c[partition_name], table.c[offset_name]
        schema = arrow_schema(table)
        batches = []
        for p, start in sorted(earliest.items()):
            condition = (partition == p) & (offset < start)
            if table is self.output_table:
                condition = (table.c.holder == topic_holder) & condition
            statement = sa.select(table).where(condition).order_by(offset)
            batches += _batch(connection.execute(statement).all(), schema)
        return pa.Table.from_batches(batches, schema)

    def cursor(self, connection: Connection) -> dict[str, dict[int, int]]:
        """Per topic and partition, the offset up to which (exclusive) it has been read into the
        ledger; empty before the first run."""
        read: dict[str, dict[int, int]] = {}
        for topic, partition, end in connection.execute(sa.select(self.cursor_table)):
            read.setdefault(topic, {})[partition] = end
        return read

    def advance(self, connection: Connection, offsets: dict[str, dict[int, int]]) -> None:
        """Record that each topic partition has been read into the ledger up to ``offsets``
        (exclusive). Forward only: a lower offset than the recorded one (a replayed, older write)
        leaves it as it is."""
        rows = [
            {"topic": topic, "partition": p, "end_offset": end}
            for topic, ends in sorted(offsets.items())
            for p, end in sorted(ends.items())
        ]
        if not rows:
            return
        statement = _upsert(connection, self.cursor_table)
        statement = statement.on_conflict_do_update(
            index_elements=[self.cursor_table.c.topic, self.cursor_table.c.partition],
            set_={"end_offset": statement.excluded.end_offset},
            where=self.cursor_table.c.end_offset < statement.excluded.end_offset,
        )
        connection.execute(statement, rows)

    def rebase(self, connection: Connection, offsets: dict[str, dict[int, int]]) -> None:
        """Record that the ledger holds each topic partition up to exactly ``offsets``: a full
        run's snapshot, even below what a later run recorded (that run's facts were just replaced
        with the full run's, so the records past the snapshot are to be checked again)."""
        connection.execute(self.cursor_table.delete())
        rows = [
            {"topic": topic, "partition": p, "end_offset": end}
            for topic, ends in sorted(offsets.items())
            for p, end in sorted(ends.items())
        ]
        if rows:
            connection.execute(self.cursor_table.insert(), rows)

    def unseen(self, connection: Connection) -> list[tuple[str, int, int, int]]:
        """Every range (topic, partition, from, to) of records deleted before any run read them."""
        u = self.unseen_table.c
        query = sa.select(u.topic, u.partition, u.from_offset, u.to_offset)
        return [
            tuple(row)
            for row in connection.execute(query.order_by(u.topic, u.partition, u.from_offset))
        ]

    def add_unseen(
        self, connection: Connection, ranges: Iterable[tuple[str, int, int, int]]
    ) -> None:
        """Record ranges of :func:`unseen` (one already recorded is left as it is)."""
        rows = [
            {"topic": t, "partition": p, "from_offset": start, "to_offset": end}
            for t, p, start, end in ranges
        ]
        if rows:
            connection.execute(
                _upsert(connection, self.unseen_table).on_conflict_do_nothing(), rows
            )

    def lock(self, connection: Connection, wait_s: float) -> None:
        """Hold the ledger for the caller's transaction: a second run waits for it instead of
        interleaving its reads and writes with this one's, which would move the counts by a stale
        difference, then fails (SQLite: "database is locked"; PostgreSQL: a lock timeout). On
        SQLite a waiting run cannot beat its heartbeat either (one writer at a time), so it waits
        no longer than ``wait_s``, the heartbeat's bound, past which it would be taken for dead;
        a frozen run keeps the lock there until it resumes or dies. On PostgreSQL a run idle
        inside its ledger transaction for ``wait_s`` (frozen) is taken for dead by the server too
        (:func:`database.bound_waits`): its session closed, its transaction rolled back and the
        lock freed; a waiter, which heartbeats meanwhile, waits twice that, so that a frozen
        holder is always closed before it gives up."""
        if connection.dialect.name == "postgresql":
            wait_ms = int(wait_s * 1000)
            database.bound_waits(connection, 2 * wait_ms, wait_ms)
            connection.execute(
                sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": self.lock_key}
            )
        else:  # a write takes SQLite's one writer lock, held until the transaction ends
            connection.exec_driver_sql(f"PRAGMA busy_timeout = {int(wait_s * 1000)}")
            connection.execute(
                self.cursor_table.update()
                .where(sa.false())
                .values(end_offset=self.cursor_table.c.end_offset)
            )
