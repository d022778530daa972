"""What a reconciliation run reads: the topics as of a snapshot, the join's waiting boards, and
the whole sink table, each as a Spark frame with readable column names.

Every output and every table row is compared through :func:`content_digest`: SHA-256 of the
record's typed columns as canonical JSON with explicit nulls, so moving text across a separator,
a NULL against an equivalent character, or a number against a string can never digest alike.
The table is read type-strictly: a value of another type than its column's is a
``type_mismatch``, never coerced back (SQLite stores whatever it is given).
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import pandas as pd
import pyarrow as pa
import sqlalchemy as sa
from confluent_kafka import Message
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from boardstream import database
from boardstream.errors import BoardstreamError
from boardstream.joins import schema
from boardstream.joins.job import JVM
from boardstream.kafka import replay
from boardstream.kafka.clients import admin_client
from boardstream.locations import checkpoint_uri
from boardstream.reconcile.checks.table_checks import NULL_BOARD_ID
from boardstream.reconcile.layout import Parts, ReconcileLayout
from boardstream.reconcile.reads import strict
from boardstream.reconcile.reads.snapshot import Snapshot, ends_now, retained
from boardstream.reconcile.reads.strict import TypeMismatch
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import Settings
from boardstream.spark.checkpoint_files import CheckpointFiles
from boardstream.spark.checkpoint_guard import recorded_identity
from boardstream.timing import phase

TABLE_CHUNK = 50_000  # rows per fetch from the sink table
KAFKA_COLUMNS = (
    "key binary, value binary, topic string, `partition` int, `offset` bigint, timestamp timestamp"
)
_KAFKA_ARROW = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
    ]
)
DEAD_LETTER_SCHEMA = "source_topic string, `partition` int, `offset` bigint, error string"
POSITIONS = "board_id string, source_partition int, source_offset bigint"


def read_topic(
    spark: SparkSession, settings: Settings, topic: str, start: dict[int, int], end: dict[int, int]
) -> DataFrame:
    """Committed records of ``topic`` in [start, end) per partition, as a batch."""
    return read_topics(spark, settings, {topic: (start, end)})


def read_topics(
    spark: SparkSession,
    settings: Settings,
    ranges: dict[str, tuple[dict[int, int], dict[int, int]]],
) -> DataFrame:
    """Committed records of several topics, each in its [start, end) per partition, as one
    batch (one scan: an incremental run's few new records of every topic in one job)."""
    wanted = {
        topic: {p: (start.get(p, 0), end[p]) for p in end if end[p] > start.get(p, 0)}
        for topic, (start, end) in ranges.items()
    }
    wanted = {topic: parts for topic, parts in wanted.items() if parts}
    if not wanted:
        return spark.createDataFrame([], KAFKA_COLUMNS)

    def offsets(side: int) -> str:
        return json.dumps(
            {
                t: {str(p): bounds[side] for p, bounds in parts.items()}
                for t, parts in wanted.items()
            }
        )

    return (
        spark.read.format("kafka")
        .options(**settings.to_spark_kafka_source_options())
        .option("assign", json.dumps({t: sorted(parts) for t, parts in wanted.items()}))
        .option("startingOffsets", offsets(0))
        .option("endingOffsets", offsets(1))
        .option("kafka.isolation.level", "read_committed")
        # Compaction (member) and transaction markers leave offset gaps that are not loss.
        .option("failOnDataLoss", "false")
        .load()
        .select("key", "value", "topic", "partition", "offset", "timestamp")
    )


def read_run(
    spark: SparkSession, settings: Settings, target: ReconcileTarget, snapshot: Snapshot
) -> tuple[dict[str, DataFrame], Snapshot, TableRead]:
    """A full run's reads, in this order: the table first (a live sink goes on loading rows of
    records past the snapshot, which the table checks would take for foreign), then every
    topic (:func:`read_snapshot`)."""
    with phase(f"reconcile: read {target.table.table.name}"):
        table_read = read_live_table(settings, target, snapshot)
    with phase("reconcile: read the topics"):
        by_driver = in_process(settings, snapshot, table_read)
        read, snapshot = read_snapshot(spark, settings, snapshot, by_driver)
    return read, snapshot, table_read


def held(snapshot: Snapshot, table_read: TableRead) -> int:
    """The records and rows a full run reads: its topics' and the table's."""
    return snapshot.records() + table_read.rows.num_rows


def in_process(settings: Settings, snapshot: Snapshot, table_read: TableRead) -> bool:
    """Whether a full run holds its inputs in the driver: its topics read by the driver's
    consumer, its checks run by DuckDB. Up to ``reconcile_in_process_max_records`` records and
    rows (:func:`held`), Spark's fixed cost per job and per source task is most of a run's
    time."""
    return held(snapshot, table_read) <= settings.reconcile_in_process_max_records


def read_snapshot(
    spark: SparkSession, settings: Settings, snapshot: Snapshot, by_driver: bool = False
) -> tuple[dict[str, DataFrame], Snapshot]:
    """Every topic of ``snapshot`` read once and held (``localCheckpoint``, or ``by_driver``
    the driver's consumer's local relation, :func:`consume_topics`: no check reads Kafka
    again, and none sees other records than another), and the snapshot with the start offsets
    listed after that read (:func:`snapshot.retained`), its records below them left out."""
    if by_driver:
        every = consume_topics(
            spark,
            settings,
            {name: (snapshot.earliest.get(name, {}), end) for name, end in snapshot.latest.items()},
        )
        held = {name: every.where(F.col("topic") == name) for name in snapshot.latest}
    else:
        held = {
            name: read_topic(
                spark, settings, name, snapshot.earliest.get(name, {}), end
            ).localCheckpoint(eager=True)
            for name, end in snapshot.latest.items()
        }
    after = retained(admin_client(settings), settings, snapshot)
    frames = {
        name: at_or_after(frame, after.earliest[name], snapshot.earliest.get(name, {}))
        for name, frame in held.items()
    }
    return frames, after


def at_or_after(frame: DataFrame, start: dict[int, int], read_from: dict[int, int]) -> DataFrame:
    """The records of ``frame`` (one topic's, read from ``read_from``) at or above ``start``."""
    moved = {p: offset for p, offset in start.items() if offset > read_from.get(p, 0)}
    if not moved:
        return frame
    below = [(F.col("partition") == p) & (F.col("offset") < offset) for p, offset in moved.items()]
    return frame.where(~functools.reduce(operator.or_, below))


def consume_topics(
    spark: SparkSession,
    settings: Settings,
    ranges: dict[str, tuple[dict[int, int], dict[int, int]]],
) -> DataFrame:
    """The frame :func:`read_topics` reads, through one consumer in the driver instead of
    Spark's Kafka source: for an incremental run's few thousand records, whose scan in a cold
    JVM costs the source's start (a consumer per task) more than the records
    (docs/BENCHMARKS.md). Committed records only, a start below a partition's earliest offset
    read from the earliest, as the source reads them."""
    columns: dict[str, list[object]] = {name: [] for name in _KAFKA_ARROW.names}

    def keep(message: Message) -> None:
        columns["key"].append(message.key())
        columns["value"].append(message.value())
        columns["topic"].append(message.topic())
        columns["partition"].append(message.partition())
        columns["offset"].append(message.offset())
        columns["timestamp"].append(message.timestamp()[1])

    wanted = {
        topic: {p: (start.get(p, 0), end[p]) for p in end} for topic, (start, end) in ranges.items()
    }
    replay.read_ranges(settings, wanted, keep, group="boardstream-reconcile")
    millis = pa.array(columns.pop("timestamp"), pa.timestamp("ms", tz="UTC"))
    arrays = [pa.array(values, _KAFKA_ARROW.field(name).type) for name, values in columns.items()]
    table = pa.table([*arrays, millis.cast(pa.timestamp("us", tz="UTC"))], schema=_KAFKA_ARROW)
    return spark.createDataFrame(table, KAFKA_COLUMNS)


def digest(columns: list[Column]) -> Column:
    """The first 60 bits of SHA-256 over the canonical JSON of ``columns`` (aliased), as a
    bigint: unambiguous (typed, quoted, explicit nulls) and fixed-width, so per-board
    aggregates stay in Spark's hash aggregation."""
    canonical = F.to_json(F.struct(*columns), {"ignoreNullFields": "false"})
    return F.conv(F.substring(F.sha2(canonical, 256), 1, 15), 16, 10).cast("bigint")


def content_digest(layout: ReconcileLayout, *, prefix: str = "") -> Column:
    """The digest of the layout's content: what a joined record and its row must share."""
    return digest([F.col(f"{prefix}{name}").alias(name) for name in layout.content_names])


def board_digest(
    layout: ReconcileLayout, board_id: Column, record: str, parts: Parts | None = None
) -> Column:
    """The digest of a stream record's own fields (``parts`` of struct column ``record``, the
    id given as ``board_id``): the same for a source record
    (:attr:`ReconcileLayout.stream_in_source`) and every output the join made of it
    (:attr:`ReconcileLayout.stream_in_output`, when ``parts`` is None)."""
    parts = layout.stream_in_output if parts is None else parts
    return digest(
        [
            (board_id if name == layout.id_column else F.col(f"{record}.{source}")).alias(name)
            for name, source in parts
        ]
    )


def member_digest(
    layout: ReconcileLayout, member_id: Column, record: str, parts: Parts | None = None
) -> Column:
    """The digest of a table version's fields (``parts`` of struct column ``record``, the key
    given as ``member_id``): the same for the table record (its fields under their own names)
    and every joined record that used it (:attr:`ReconcileLayout.table_in_output`, when
    ``parts`` is None)."""
    parts = layout.table_in_output if parts is None else parts
    return digest(
        [
            member_id.alias(layout.table_key),
            *[F.col(f"{record}.{source}").alias(name) for name, source in parts],
        ]
    )


def _parsed(columns: tuple[tuple[str, str], ...]) -> Column:
    """A record's value parsed as JSON into ``columns``; none when the digest reads no field
    of it (a sink that keeps none of the table's fields but its key), which JSON cannot be
    parsed into."""
    if not columns:
        return F.lit(None).cast(StructType([]))
    return F.from_json(F.col("value").cast("string"), schema.ddl(columns))


def members(raw: DataFrame, layout: ReconcileLayout) -> DataFrame:
    """Table records: each version's position, its fields' digest (a tombstone's too) and
    whether it is a tombstone."""
    record = _parsed(layout.table_fields)
    member_id = F.col("key").cast("string").try_cast(layout.key_type)
    in_record = tuple((name, name) for name, _ in layout.table_fields)
    return raw.select(
        member_id.alias("member_id"), record.alias("d"), "partition", "offset", "value"
    ).select(
        "member_id",
        F.col("partition").alias("member_partition"),
        F.col("offset").alias("member_offset"),
        member_digest(layout, F.col("member_id"), "d", in_record).alias("member_digest"),
        F.col("value").isNull().alias("tombstone"),
    )


def sources(raw: DataFrame, layout: ReconcileLayout) -> DataFrame:
    """Stream records: the id (the key) at each source position, and its fields' digest."""
    record = _parsed(layout.stream_fields)
    board_id = F.col("key").cast("string")
    return raw.select(board_id.alias("board_id"), record.alias("d"), "partition", "offset").select(
        "board_id",
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        board_digest(layout, F.col("board_id"), "d", layout.stream_in_source).alias("board_digest"),
    )


def details(raw: DataFrame, layout: ReconcileLayout) -> DataFrame:
    """Joined records: the source position they name, their own position, the table version
    they used and their content digest."""
    record = F.from_json(F.col("value").cast("string"), schema.ddl(layout.record))
    board_id, member_id = F.col(f"d.{layout.id_column}"), F.col(f"d.{layout.table_key_column}")
    (board_partition, board_offset), (member_partition, member_offset) = (
        layout.stream_position,
        layout.table_position,
    )
    return raw.select(record.alias("d"), "partition", "offset").select(
        board_id.alias("board_id"),
        member_id.alias("member_id"),
        F.col(f"d.{board_partition}").alias("source_partition"),
        F.col(f"d.{board_offset}").alias("source_offset"),
        F.col("partition").alias("detail_partition"),
        F.col("offset").alias("detail_offset"),
        content_digest(layout, prefix="d.").alias("digest"),
        board_digest(layout, board_id, "d").alias("board_digest"),
        F.col(f"d.{member_partition}").alias("member_partition"),
        F.col(f"d.{member_offset}").alias("member_offset"),
        member_digest(layout, member_id, "d").alias("member_digest"),
    )


def unmatched(raw: DataFrame, layout: ReconcileLayout) -> DataFrame:
    """Unmatched records: the stream record, the source position they name, its fields'
    digest, and their own position (the digest ledger keys them by it)."""
    record = F.from_json(F.col("value").cast("string"), schema.ddl(layout.record))
    board_id = F.col(f"d.{layout.id_column}")
    partition, offset = layout.stream_position
    return raw.select(record.alias("d"), *_record_position()).select(
        board_id.alias("board_id"),
        F.col(f"d.{partition}").alias("source_partition"),
        F.col(f"d.{offset}").alias("source_offset"),
        board_digest(layout, board_id, "d").alias("board_digest"),
        "record_partition",
        "record_offset",
    )


def _record_position() -> list[Column]:
    """A record's own position in its topic, as the digest ledger keys outputs."""
    return [F.col("partition").alias("record_partition"), F.col("offset").alias("record_offset")]


def dead_letters(raw: DataFrame, source_topic: str) -> DataFrame:
    """Dead letters of records of ``source_topic``: the position of the record each replaces
    (a dead letter carries no trusted board id: its record could not be parsed), and the dead
    letter's own position."""
    record = F.from_json(F.col("value").cast("string"), DEAD_LETTER_SCHEMA)
    return (
        raw.select(record.alias("d"), *_record_position())
        .where(F.col("d.source_topic") == source_topic)
        .select(
            F.lit(None).cast("string").alias("board_id"),
            F.col("d.partition").alias("source_partition"),
            F.col("d.offset").alias("source_offset"),
            "record_partition",
            "record_offset",
        )
    )


def pending(
    spark: SparkSession, layout: ReconcileLayout, checkpoint: str, batch_id: int | None
) -> DataFrame:
    """Stream records the join has read and holds, waiting for their table row (its RocksDB
    state, as of ``batch_id``), with the table key and when each arrived. The state's layout is
    the one its engine wrote (the checkpoint's identity says which): the JVM engine's variable
    ``waiting`` holds only them, so reading them costs what they are, not what the table is."""
    if batch_id is None:
        return spark.createDataFrame(
            [], f"{POSITIONS}, member_id {layout.key_type}, arrived_ms bigint"
        )
    identity = recorded_identity(CheckpointFiles(spark), checkpoint_uri(checkpoint))
    jvm = identity.get("engine") == JVM
    if jvm and "waiting" not in identity.get("state_variables", ()):
        raise BoardstreamError(
            f"the join's checkpoint {checkpoint} was written by an older version of its JVM "
            "engine (the waiting boards inside the state variable `member`), which this "
            "version's join refuses to resume: rebuild the join's state on a new checkpoint, "
            "then reconcile"
        )
    state = (
        spark.read.format("statestore")
        .option("stateVarName", "waiting" if jvm else "members")
        .option("batchId", str(batch_id))
        .load(checkpoint)
    )
    if jvm:  # one table row per key: its waiting records in the variable's one array
        (records,) = state.schema["value"].dataType.fieldNames()  # named after the stream
        waiting = state.select(
            F.col("key.value").alias("member_id"), F.explode(f"value.`{records}`").alias("w")
        )
        member_id = F.col("member_id")
        prefix = "w."
        board_id = F.col(f"w.{layout.id_column}")
    else:  # a bucket of members per key: column-wise arrays, each row led by its member id
        zipped = F.arrays_zip(*(f"value.pending_{c}" for c in _PENDING_COLUMNS))
        waiting = state.select(F.explode(zipped).alias("w"))
        member_id = F.col("w.pending_member_id")
        prefix = "w.pending_"
        board_id = F.col("w.pending_board_id")
    return waiting.select(
        board_id.alias("board_id"),
        F.col(f"{prefix}partition").alias("source_partition"),
        F.col(f"{prefix}offset").alias("source_offset"),
        member_id.alias("member_id"),
        F.col(f"{prefix}arrived_ms").alias("arrived_ms"),
    )


_PENDING_COLUMNS = ("board_id", "partition", "offset", "member_id", "arrived_ms")


def table_rows(spark: SparkSession, table_read: TableRead, layout: ReconcileLayout) -> DataFrame:
    """The table's rows as the checks read them: the stream record's id (a NULL one named,
    :data:`NULL_BOARD_ID`: SQLite lets a NULL into a non-integer primary key), the joined
    record's position they were loaded from, their content digest and whether they are typed."""
    roles = layout.roles
    partition, offset = layout.joined_position
    return spark.createDataFrame(table_read.rows).select(
        F.coalesce(layout.id_column, F.lit(NULL_BOARD_ID)).alias("board_id"),
        F.col(partition).alias(roles[partition]),
        F.col(offset).alias(roles[offset]),
        content_digest(layout).alias("digest"),
        "typed",
    )


def table_keys(table_read: TableRead, layout: ReconcileLayout) -> pd.DataFrame:
    """Each row's stream id and table key (``board_id``, ``member_id``): what the Great
    Expectations suite checks of the table."""
    names = [layout.id_column, layout.table_key_column]
    return table_read.rows.select(names).rename_columns(["board_id", "member_id"]).to_pandas()


@dataclass(frozen=True)
class TableRead:
    """Every row of the sink table, typed like the joined records; values of another type
    are nulled here, listed in ``mismatches`` and their rows marked ``typed`` false, so they
    are reported as such rather than compared."""

    rows: pa.Table
    mismatches: list[TypeMismatch]
    # The joined topic's end offsets listed once the rows were read (empty: not listed). The sink
    # loads a row after its record is written, so no row it loaded names a position at or past
    # them; one between the snapshot's end and them is a live sink's, loaded ahead of the run.
    detail_end: dict[int, int] = field(default_factory=dict)


def read_live_table(
    settings: Settings,
    target: ReconcileTarget,
    snapshot: Snapshot,
    board_ids: Iterable[str] | None = None,
) -> TableRead:
    """:func:`read_table`, then the joined topic's end offsets listed (``TableRead.detail_end``):
    a live sink goes on loading rows of records written after the snapshot, which only that
    later listing tells from rows naming positions no record has."""
    read = read_table(settings, target, board_ids)
    ends = ends_now(admin_client(settings), settings, target.topics.joined, snapshot)
    return replace(read, detail_end=ends)


def read_table(
    settings: Settings, target: ReconcileTarget, board_ids: Iterable[str] | None = None
) -> TableRead:
    """All of ``target``'s table, whatever positions its rows claim,
    or only the rows of ``board_ids`` (an incremental run's boards, by primary key;
    :data:`NULL_BOARD_ID` names the rows without one), type-strictly (:mod:`.strict`). Read
    with the DB driver's own cursor, in chunks straight into Arrow (SQLAlchemy's row objects
    added about a tenth)."""
    layout = target.layout
    types = layout.types
    names = [*layout.content_names, *layout.joined_position]
    arrow = pa.schema(
        [(name, strict.arrow_type(types[name])) for name in names] + [("typed", pa.bool_())]
    )
    engine = database.engine(settings.database)
    sqlite = engine.dialect.name == "sqlite"
    target.table.create(engine)
    c = target.table.table.c
    key = c[layout.id_column]
    query = sa.select(*(c[name] for name in names))
    if board_ids is None:
        queries = [(str(query.compile(engine)), ())]
    else:
        wanted = sorted(set(board_ids))
        queries = [
            _compiled(query.where(key.in_(chunk)), engine) for chunk in database.chunks(wanted)
        ]
        if NULL_BOARD_ID in wanted:  # the rows SQLite let in without a board id
            queries.append(_compiled(query.where(key.is_(None)), engine))
    batches, mismatches = [], []
    at = names.index(layout.id_column)
    with engine.connect() as connection:
        cursor = connection.connection.cursor()
        for sql, parameters in queries:
            cursor.execute(sql, parameters)
            while rows := cursor.fetchmany(TABLE_CHUNK):
                columns = [list(column) for column in zip(*rows, strict=True)]
                typed = [True] * len(rows)
                for index, name in enumerate(names):
                    kind = types[name]
                    for row, mismatch in strict.strict(
                        columns[index], columns[at], name, kind, sqlite
                    ):
                        typed[row] = False
                        mismatches.append(mismatch)
                columns.append(typed)
                batches.append(pa.record_batch(list(map(pa.array, columns, arrow.types)), arrow))
        cursor.close()
    engine.dispose()
    return TableRead(pa.Table.from_batches(batches, arrow), mismatches)


def _compiled(query: sa.Select, engine: sa.Engine) -> tuple[str, tuple | dict]:
    """``query`` as the DB driver's own SQL and parameters (its paramstyle)."""
    compiled = query.compile(engine, compile_kwargs={"render_postcompile": True})
    if compiled.positiontup:  # qmark, format: positional
        return str(compiled), tuple(compiled.params[name] for name in compiled.positiontup)
    return str(compiled), compiled.params
