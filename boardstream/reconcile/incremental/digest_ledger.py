"""The digest ledger of issue #22: a compact projection of every record a reconciliation has read,
so an incremental run can rebuild the checks' frames for the keys new data touches without
re-reading the topics from the beginning.

Each table has the column names of its reader's frame (:mod:`.readers`), so a looked-up Arrow
table converts to the Spark schema the checks already read:

- ``reconcile_source``: ``readers.sources`` of ``board``, by source position;
- ``reconcile_output``: the join's outputs (``holder`` joined, unmatched or dead_lettered), by
  the record's own position in its topic (``record_partition``, ``record_offset``; a joined
  record's ``detail_partition``/``detail_offset``), indexed by the source position they name and
  by board id;
- ``reconcile_member``: ``readers.members`` of ``member``, by position, indexed by member id;
- ``reconcile_refused``: positions the join or the sink dead-lettered that are not board records;
- ``reconcile_cursor``: how far each topic partition has been read into the ledger;
- ``reconcile_unseen``: ranges of output records their topic deleted before any run read them
  (:mod:`.expired`).

Every function takes the caller's :class:`~sqlalchemy.engine.Connection` and never commits, so a
run's ledger writes and its verdict commit together or not at all. Writes are idempotent: a row
already present (an at-least-once replay of a ledger write) is skipped, never duplicated and
never an error. Lookups cost what their keys cost: the keys go in chunks of at most
:data:`CHUNK_PARAMETERS` bound parameters (SQLite's historical limit is 999) to a primary-key or
index range, never a scan of the table.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from boardstream import database, staging
from boardstream.errors import BoardstreamError
from boardstream.reconcile.target import DEAD_LETTERED, JOINED, UNMATCHED

log = logging.getLogger(__name__)

metadata = sa.MetaData()

HOLDERS = (JOINED, UNMATCHED, DEAD_LETTERED)
CHUNK_PARAMETERS = 900  # bound parameters per lookup statement, under SQLite's 999
# PostgreSQL appends of at least this many rows go through COPY into a temporary table.
COPY_THRESHOLD = 1_000
_LOCK_KEY = 0x626F617264  # "board": the advisory lock the runs' ledger transactions hold

reconcile_source = sa.Table(
    "reconcile_source",
    metadata,
    sa.Column("board_id", sa.Text),
    sa.Column("source_partition", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("source_offset", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("board_digest", sa.BigInteger),
)

reconcile_output = sa.Table(
    "reconcile_output",
    metadata,
    sa.Column("holder", sa.String(16), primary_key=True),
    sa.Column("record_partition", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("record_offset", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("board_id", sa.Text, index=True),
    sa.Column("member_id", sa.BigInteger),
    sa.Column("source_partition", sa.Integer),
    sa.Column("source_offset", sa.BigInteger),
    sa.Column("digest", sa.BigInteger),
    sa.Column("board_digest", sa.BigInteger),
    sa.Column("member_partition", sa.Integer),
    sa.Column("member_offset", sa.BigInteger),
    sa.Column("member_digest", sa.BigInteger),
    sa.Index("reconcile_output_source", "source_partition", "source_offset"),
)

reconcile_member = sa.Table(
    "reconcile_member",
    metadata,
    sa.Column("member_id", sa.BigInteger, index=True),
    sa.Column("member_partition", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("member_offset", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("member_digest", sa.BigInteger),
    sa.Column("tombstone", sa.Boolean, nullable=False),
)

reconcile_refused = sa.Table(
    "reconcile_refused",
    metadata,
    sa.Column("source_topic", sa.Text, primary_key=True),
    sa.Column("source_partition", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("source_offset", sa.BigInteger, primary_key=True, autoincrement=False),
)

reconcile_cursor = sa.Table(
    "reconcile_cursor",
    metadata,
    sa.Column("topic", sa.Text, primary_key=True),
    sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("end_offset", sa.BigInteger, nullable=False),
)

reconcile_unseen = sa.Table(
    "reconcile_unseen",
    metadata,
    sa.Column("topic", sa.Text, primary_key=True),
    sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("from_offset", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("to_offset", sa.BigInteger, nullable=False),
)

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
    "board_id",
    "member_id",
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
# Where each holder keeps a record's own position (below): table and position columns.
_POSITIONS = {
    "source": (reconcile_source, "source_partition", "source_offset"),
    "member": (reconcile_member, "member_partition", "member_offset"),
    **{h: (reconcile_output, "record_partition", "record_offset") for h in HOLDERS},
}


def create(engine: Engine) -> None:
    """Create the ledger's tables (and indexes) that do not exist yet."""
    metadata.create_all(engine)


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


def _table(table_name_or_table: str | sa.Table) -> sa.Table:
    if isinstance(table_name_or_table, sa.Table):
        if table_name_or_table.metadata is not metadata:
            raise BoardstreamError(f"{table_name_or_table.name} is not a digest-ledger table")
        return table_name_or_table
    try:
        return metadata.tables[table_name_or_table]
    except KeyError:
        raise BoardstreamError(f"no digest-ledger table {table_name_or_table!r}") from None


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


def outputs(holder: str, rows: pa.Table) -> pa.Table:
    """Rows of a reader's output frame as ``reconcile_output`` rows of ``holder``: a joined
    record's ``detail_partition``/``detail_offset`` are its record position; the other holders'
    frames must carry ``record_partition``/``record_offset`` themselves."""
    if holder not in HOLDERS:
        raise BoardstreamError(f"holder must be one of {HOLDERS}, not {holder!r}")
    renamed = rows.rename_columns([DETAIL_NAMES_BACK.get(n, n) for n in rows.column_names])
    holders = pa.array([holder] * rows.num_rows, pa.string())
    return conform(reconcile_output, renamed.append_column("holder", holders))


def as_details(rows: pa.Table) -> pa.Table:
    """Joined ``reconcile_output`` rows in ``readers.details``' columns and order."""
    renamed = rows.rename_columns([DETAIL_NAMES.get(n, n) for n in rows.column_names])
    return renamed.select(list(DETAIL_COLUMNS))


def append(connection: Connection, table_name_or_table: str | sa.Table, rows: pa.Table) -> int:
    """Insert ``rows`` into a ledger table, skipping any whose primary key is present already
    (a replayed ledger write); returns how many rows were given. In the caller's transaction."""
    table = _table(table_name_or_table)
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


def stage(engine: Engine, table_name_or_table: str | sa.Table, rows: pa.Table) -> sa.Table:
    """``rows`` for a ledger table staged ahead of the run's transaction (:mod:`.staging`),
    conformed as :func:`append` conforms them; :func:`append_staged` moves them in."""
    table = _table(table_name_or_table)
    return staging.stage(engine, table, conform(table, rows))


def append_staged(
    connection: Connection, staged: sa.Table, table_name_or_table: str | sa.Table
) -> None:
    """The rows of ``staged`` (:func:`stage`) into their ledger table as :func:`append` adds
    them: a row whose primary key is present already is skipped. In the caller's transaction."""
    staging.move_in(connection, staged, _table(table_name_or_table), skip_present=True)


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


def sources_at(connection: Connection, positions: Iterable[tuple[int, int]]) -> pa.Table:
    """The ``board`` records at these source positions (``readers.sources`` columns)."""
    return _lookup(connection, reconcile_source, ("source_partition", "source_offset"), positions)


def outputs_at(connection: Connection, positions: Iterable[tuple[int, int]]) -> pa.Table:
    """Every output (each holder's) that names one of these source positions: the whole
    ``reconcile_output`` row, holder and record position included."""
    return _lookup(connection, reconcile_output, ("source_partition", "source_offset"), positions)


def outputs_of(connection: Connection, board_ids: Iterable[str]) -> pa.Table:
    """The joined records of these boards, in ``readers.details`` columns."""
    # Filtered here, not in SQL: a condition on holder can lead the planner to the primary
    # key's prefix (every joined row) instead of the board_id index.
    found = _lookup(connection, reconcile_output, ("board_id",), board_ids)
    return as_details(found.filter(pc.equal(found["holder"], "joined")))


def details_at(connection: Connection, record_positions: Iterable[tuple[int, int]]) -> pa.Table:
    """The joined records at these ``board-detail`` positions, in ``readers.details`` columns."""
    found = _lookup(
        connection,
        reconcile_output,
        ("holder", "record_partition", "record_offset"),
        (("joined", p, o) for p, o in record_positions),
    )
    return as_details(found)


def members_at(connection: Connection, positions: Iterable[tuple[int, int]]) -> pa.Table:
    """The ``member`` records at these positions (``readers.members`` columns)."""
    return _lookup(connection, reconcile_member, ("member_partition", "member_offset"), positions)


def members_of(connection: Connection, member_ids: Iterable[int]) -> pa.Table:
    """Every version (tombstones too) of these members (``readers.members`` columns)."""
    return _lookup(connection, reconcile_member, ("member_id",), member_ids)


def refused_at(
    connection: Connection, source_topic: str, positions: Iterable[tuple[int, int]]
) -> pa.Table:
    """Which of these positions of ``source_topic`` the join or the sink dead-lettered."""
    return _lookup(
        connection,
        reconcile_refused,
        ("source_topic", "source_partition", "source_offset"),
        ((source_topic, p, o) for p, o in positions),
    )


def refused(connection: Connection) -> pa.Table:
    """Every position the join or the sink dead-lettered (``reconcile_refused`` rows): few,
    as dead letters are bounded."""
    rows = connection.execute(sa.select(reconcile_refused).order_by(*reconcile_refused.primary_key))
    return pa.Table.from_batches(
        _batch(rows.all(), arrow_schema(reconcile_refused)), arrow_schema(reconcile_refused)
    )


def below(connection: Connection, topic_holder: str, earliest: dict[int, int]) -> pa.Table:
    """The rows of ``topic_holder`` ('source', 'member' or an output holder) whose own record
    position lies below its partition's ``earliest`` offset: records retention or
    ``deleteRecords`` has removed since. A record at ``earliest`` is kept; a partition not in
    ``earliest`` is not looked at. One primary-key range per partition."""
    try:
        table, partition_name, offset_name = _POSITIONS[topic_holder]
    except KeyError:
        raise BoardstreamError(
            f"topic_holder must be one of {sorted(_POSITIONS)}, not {topic_holder!r}"
        ) from None
    partition, offset = table.c[partition_name], table.c[offset_name]
    schema = arrow_schema(table)
    batches = []
    for p, start in sorted(earliest.items()):
        condition = (partition == p) & (offset < start)
        if table is reconcile_output:
            condition = (table.c.holder == topic_holder) & condition
        statement = sa.select(table).where(condition).order_by(offset)
        batches += _batch(connection.execute(statement).all(), schema)
    return pa.Table.from_batches(batches, schema)


def cursor(connection: Connection) -> dict[str, dict[int, int]]:
    """Per topic and partition, the offset up to which (exclusive) it has been read into the
    ledger; empty before the first run."""
    read: dict[str, dict[int, int]] = {}
    for topic, partition, end in connection.execute(sa.select(reconcile_cursor)):
        read.setdefault(topic, {})[partition] = end
    return read


def advance(connection: Connection, offsets: dict[str, dict[int, int]]) -> None:
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
    statement = _upsert(connection, reconcile_cursor)
    statement = statement.on_conflict_do_update(
        index_elements=[reconcile_cursor.c.topic, reconcile_cursor.c.partition],
        set_={"end_offset": statement.excluded.end_offset},
        where=reconcile_cursor.c.end_offset < statement.excluded.end_offset,
    )
    connection.execute(statement, rows)


def rebase(connection: Connection, offsets: dict[str, dict[int, int]]) -> None:
    """Record that the ledger holds each topic partition up to exactly ``offsets``: a full
    run's snapshot, even below what a later run recorded (that run's facts were just replaced
    with the full run's, so the records past the snapshot are to be checked again)."""
    connection.execute(reconcile_cursor.delete())
    rows = [
        {"topic": topic, "partition": p, "end_offset": end}
        for topic, ends in sorted(offsets.items())
        for p, end in sorted(ends.items())
    ]
    if rows:
        connection.execute(reconcile_cursor.insert(), rows)


def unseen(connection: Connection) -> list[tuple[str, int, int, int]]:
    """Every range (topic, partition, from, to) of records deleted before any run read them."""
    u = reconcile_unseen.c
    query = sa.select(u.topic, u.partition, u.from_offset, u.to_offset)
    return [
        tuple(row)
        for row in connection.execute(query.order_by(u.topic, u.partition, u.from_offset))
    ]


def add_unseen(connection: Connection, ranges: Iterable[tuple[str, int, int, int]]) -> None:
    """Record ranges of :func:`unseen` (one already recorded is left as it is)."""
    rows = [
        {"topic": t, "partition": p, "from_offset": start, "to_offset": end}
        for t, p, start, end in ranges
    ]
    if rows:
        connection.execute(_upsert(connection, reconcile_unseen).on_conflict_do_nothing(), rows)


def lock(connection: Connection, wait_s: float) -> None:
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
        connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
    else:  # a write takes SQLite's one writer lock, held until the transaction ends
        connection.exec_driver_sql(f"PRAGMA busy_timeout = {int(wait_s * 1000)}")
        connection.execute(
            reconcile_cursor.update()
            .where(sa.false())
            .values(end_offset=reconcile_cursor.c.end_offset)
        )
