"""The exact checks of one snapshot, as a Spark batch job over the Kafka connector.

Every source board is identified by its position (partition, offset) in ``board``, which is what
each output records as provenance: ``board-detail`` and ``board-unmatched`` carry
``board_partition``/``board_offset``, a dead letter its ``partition``/``offset``. A board the
join has read but still holds (waiting for its member) is read from the join's own state store.
So "missing" means: read by the join, yet in no output and not waiting; nothing is inferred
from counts or offset differences.

Two frames carry the checks, each built with one shuffle: the position ledger (every record of
the board topic, the outputs, the dead letters and the join's state, with what its position holds
in all of them) and the per-board frame (board-detail's newest record of each board against its
table rows). Every count and finding is a row filter on one of them, except the drill into the
differing hash buckets and the member check (one broadcast anti-join), and all are evaluated in
one Spark action: with a join and a shuffle per check, the stages took longer than the data.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import reduce

import pandas as pd
import pyarrow as pa
import sqlalchemy as sa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from boardstream import database
from boardstream.joins import schema
from boardstream.reconcile.snapshot import Snapshot
from boardstream.settings import Settings
from boardstream.sink import table as sink_table
from boardstream.timing import phase

EXAMPLES = 20  # ids kept per finding
HASH_BUCKETS = 1024
SUM = "decimal(38,0)"  # sums of 64-bit hashes, exact
TABLE_CHUNK = 50_000  # rows per fetch from board_detail
ARROW_TYPES = {"string": pa.string(), "bigint": pa.int64(), "int": pa.int32()}
CANONICAL = [c for c in sink_table.COLUMNS if c not in ("detail_partition", "detail_offset")]
# Findings that fail a run; the rest are reported.
FAILING = (
    "missing",
    "missing_in_table",
    "extra",
    "extra_in_table",
    "duplicates",
    "mismatched",
    "referential",
)
# Counts, then every finding, in the order runs report them.
COUNTED = ("source", "joined", "unmatched", "dead_lettered", "pending", "expected_table_rows")
FINDINGS = (
    "missing",
    "extra",
    "source_expired",
    "topic_replays",
    "in_flight",
    "referential",
    "duplicates",
    "missing_in_table",
    "extra_in_table",
    "mismatched",
)
OUTPUT_SCHEMA = schema.ddl(tuple(c for c in schema.OUTPUT if c[0] != "outcome"))
KAFKA_COLUMNS = (
    "key binary, value binary, topic string, `partition` int, `offset` bigint, timestamp timestamp"
)
DLQ_SCHEMA = "source_topic string, `partition` int, `offset` bigint, error string"


@dataclass(frozen=True)
class Finding:
    count: int
    examples: list[str]  # sorted; up to EXAMPLES unless all were asked for


@dataclass
class Reconciliation:
    counts: dict[str, int]
    findings: dict[str, Finding]
    table_snapshot: pd.DataFrame = field(repr=False)  # board_id, member_id of board_detail
    expected_table_rows: int = 0

    @property
    def passed(self) -> bool:
        return all(self.findings[kind].count == 0 for kind in FAILING)

    def difference_sets(self) -> dict[str, pd.DataFrame]:
        return {kind: pd.DataFrame({"board_id": self.findings[kind].examples}) for kind in FAILING}


def read_topic(
    spark: SparkSession, settings: Settings, topic: str, start: dict[int, int], end: dict[int, int]
) -> DataFrame:
    """Committed records of ``topic`` in [start, end) per partition, as a batch."""
    ranges = {p: (start.get(p, 0), end[p]) for p in end if end[p] > start.get(p, 0)}
    if not ranges:
        return spark.createDataFrame([], KAFKA_COLUMNS)
    return (
        spark.read.format("kafka")
        .options(**settings.to_spark_kafka_options())
        .option("assign", json.dumps({topic: sorted(ranges)}))
        .option("startingOffsets", json.dumps({topic: {str(p): s for p, (s, _) in ranges.items()}}))
        .option("endingOffsets", json.dumps({topic: {str(p): e for p, (_, e) in ranges.items()}}))
        .option("kafka.isolation.level", "read_committed")
        # Compaction (member) and transaction markers leave offset gaps that are not loss.
        .option("failOnDataLoss", "false")
        .load()
        .select("key", "value", "topic", "partition", "offset", "timestamp")
    )


def reconcile(
    spark: SparkSession,
    settings: Settings,
    snapshot: Snapshot,
    join_checkpoint: str,
    examples: int | None = EXAMPLES,
) -> Reconciliation:
    """Check ``snapshot``; each finding keeps ``examples`` ids (all of them when None)."""
    # Arrow for this session's pandas conversions (repair's toPandas too): row by row is minutes.
    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
    board, detail_topic = settings.board_topic, settings.board_detail_topic

    def topic(name: str) -> DataFrame:
        return read_topic(
            spark, settings, name, snapshot.earliest.get(name, {}), snapshot.latest[name]
        )

    with phase("reconcile: read board_detail"):
        rows = _read_table(settings, snapshot.latest[detail_topic])
    details = _details(topic(detail_topic)).cache()  # read by both frames and referential
    table = spark.createDataFrame(rows).select(
        "board_id", "detail_partition", "detail_offset", _content_hash(), _bucket()
    )
    boards = _boards(details, table, snapshot.sink.of(detail_topic)).cache()
    with phase("reconcile: board-detail against board_detail"):
        differing = _differing_buckets(boards)
    ledger = _ledger(
        {
            "source": _sources(topic(board)),
            "detail": details,
            "unmatched": _unmatched(topic(settings.unmatched_topic)),
            "dlq": _dead_letters(topic(settings.dlq_topic), board),
            "pending": _pending(spark, join_checkpoint, snapshot.join.batch_id),
        }
    )
    member_ids = topic(settings.member_topic).select(
        F.col("key").cast("string").cast("bigint").alias("member_id")
    )
    referential = details.join(F.broadcast(member_ids), "member_id", "left_anti")
    with phase("reconcile: position ledger and every check"):
        evaluated = _evaluate(
            [
                _emit(ledger, _position_checks(snapshot.join.of(board), snapshot.earliest[board])),
                _emit(boards, _board_checks()),
                _kind(_extra_in_table(boards), "extra_in_table"),
                _kind(_mismatched(table, boards, differing), "mismatched"),
                _kind(referential, "referential"),
            ],
            examples,
        )
    details.unpersist()
    boards.unpersist()
    counts = {kind: evaluated[kind].count for kind in (*COUNTED, *FINDINGS)}
    expected_rows = counts.pop("expected_table_rows")
    table_snapshot = rows.select(["board_id", "member_id"]).to_pandas()
    return Reconciliation(
        counts, {kind: evaluated[kind] for kind in FINDINGS}, table_snapshot, expected_rows
    )


def _evaluate(checked: list[DataFrame], examples: int | None) -> dict[str, Finding]:
    """Every finding and count in one Spark action over ``checked`` (kind, board_id rows): per
    kind, the number of rows and the sorted board ids (a count's are null; ``examples`` of
    them, or all)."""
    ids = F.array_sort(F.collect_list("board_id"))
    rows = (
        reduce(DataFrame.unionByName, checked)
        .groupBy("kind")
        .agg(F.count("*").alias("n"), (F.slice(ids, 1, examples) if examples else ids).alias("ids"))
        .collect()
    )
    found = {row.kind: Finding(row.n, list(row.ids)) for row in rows}
    return {kind: found.get(kind, Finding(0, [])) for kind in (*COUNTED, *FINDINGS)}


def _emit(frame: DataFrame, checks: dict[str, Column]) -> DataFrame:
    """(kind, board_id) rows: for every row of ``frame``, one per check that holds on it, with
    the row's board id for a finding (null for a count). One pass over ``frame`` for them all."""
    holding = F.array_compact(F.array(*[F.when(holds, F.lit(k)) for k, holds in checks.items()]))
    kind = F.col("kind")
    return frame.select(F.explode(holding).alias("kind"), "board_id").select(
        kind, F.when(kind.isin(*FINDINGS), F.col("board_id")).alias("board_id")
    )


def _kind(frame: DataFrame, kind: str) -> DataFrame:
    return frame.select(F.lit(kind).alias("kind"), "board_id")


def _sources(raw: DataFrame) -> DataFrame:
    return raw.select(
        F.col("key").cast("string").alias("board_id"),
        F.col("partition").alias("p"),
        F.col("offset").alias("o"),
    )


def _unmatched(raw: DataFrame) -> DataFrame:
    """board-unmatched records: the board and its source position (nothing else is checked)."""
    fields = "board_id string, board_partition int, board_offset bigint"
    d = F.from_json(F.col("value").cast("string"), fields)
    return raw.select(d.alias("d")).select(
        "d.board_id", F.col("d.board_partition").alias("p"), F.col("d.board_offset").alias("o")
    )


def _details(raw: DataFrame) -> DataFrame:
    """board-detail records: source position, own position, member and content hash."""
    d = F.from_json(F.col("value").cast("string"), OUTPUT_SCHEMA)
    parsed = raw.select(d.alias("d"), "partition", "offset").select(
        *[F.col(f"d.{name}").alias(name) for name in CANONICAL],
        F.col("d.board_partition").alias("p"),
        F.col("d.board_offset").alias("o"),
        F.col("partition").alias("detail_partition"),
        F.col("offset").alias("detail_offset"),
    )
    return parsed.select(
        "board_id", "member_id", "p", "o", "detail_partition", "detail_offset", _content_hash()
    )


def _dead_letters(raw: DataFrame, board_topic: str) -> DataFrame:
    d = F.from_json(F.col("value").cast("string"), DLQ_SCHEMA)
    return (
        raw.select(d.alias("d"))
        .where(F.col("d.source_topic") == board_topic)
        .select(
            F.lit(None).cast("string").alias("board_id"),
            F.col("d.partition").alias("p"),
            F.col("d.offset").alias("o"),
        )
    )


def _pending(spark: SparkSession, checkpoint: str, batch_id: int | None) -> DataFrame:
    """Boards the join has read and holds, waiting for their member (its RocksDB state)."""
    if batch_id is None:
        return spark.createDataFrame([], "board_id string, p int, o bigint")
    state = (
        spark.read.format("statestore")
        .option("stateVarName", "members")
        .option("batchId", str(batch_id))
        .load(checkpoint)
    )
    waiting = F.explode(
        F.arrays_zip("value.pending_board_id", "value.pending_partition", "value.pending_offset")
    )
    return state.select(waiting.alias("w")).select(
        F.col("w.pending_board_id").alias("board_id"),
        F.col("w.pending_partition").alias("p"),
        F.col("w.pending_offset").alias("o"),
    )


def _ledger(holders: dict[str, DataFrame]) -> DataFrame:
    """Every record of every holder (tag, board_id, p, o), with how many records each holder
    has at its position (``n_<holder>``) and whether it is its holder's first there."""
    tag = F.col("tag")
    position = Window.partitionBy("p", "o").orderBy("tag")
    whole = position.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    tagged = [
        frame.select(F.lit(name).alias("tag"), "board_id", "p", "o")
        for name, frame in holders.items()
    ]
    return reduce(DataFrame.unionByName, tagged).select(
        "*",
        *[F.count_if(tag == name).over(whole).alias(f"n_{name}") for name in holders],
        (~F.lag("tag").over(position).eqNullSafe(tag)).alias("first"),
    )


def _position_checks(join_end: dict[int, int], earliest: dict[int, int]) -> dict[str, Column]:
    """The ledger's counts (distinct positions per holder; the source counts what the join had
    read) and findings."""
    tag = F.col("tag")
    first = F.col("first")
    processed = _any((F.col("p") == p) & (F.col("o") < o) for p, o in join_end.items())
    unaccounted = F.expr("n_detail + n_unmatched + n_dlq + n_pending = 0")
    source = tag == "source"
    output = tag.isin("detail", "unmatched")
    # A source board below the topic's earliest offset was deleted by retention: its outputs
    # can no longer be checked against it, which is reported, not called extra.
    retained = _any((F.col("p") == p) & (F.col("o") >= start) for p, start in earliest.items())
    return {
        "source": source & processed,
        "joined": (tag == "detail") & first,
        "unmatched": (tag == "unmatched") & first,
        "dead_lettered": (tag == "dlq") & first,
        "pending": tag == "pending",
        "missing": source & processed & unaccounted,
        "extra": output & retained & (F.col("n_source") == 0),
        "source_expired": output & ~retained,
        "topic_replays": (tag == "detail") & first & (F.col("n_detail") > 1),
        "in_flight": (source & ~processed & unaccounted) | (tag == "pending"),
    }


def _any(conditions: Iterable[Column]) -> Column:
    return reduce(lambda a, b: a | b, conditions, F.lit(False))


def _below(ends: dict[int, int]) -> Column:
    """board-detail rows (by their own partition and offset) below ``ends``."""
    return _any(
        (F.col("detail_partition") == p) & (F.col("detail_offset") < o) for p, o in ends.items()
    )


def _content_hash() -> Column:
    """A hash of the canonical columns, the same for a board-detail record and its table row."""
    text = [F.coalesce(F.col(c).cast("string"), F.lit("\u0000")) for c in CANONICAL]
    return F.xxhash64(F.concat_ws("\u0001", *text)).alias("h")


def _bucket() -> Column:
    return F.pmod(F.xxhash64("board_id"), F.lit(HASH_BUCKETS)).alias("bucket")


def _boards(details: DataFrame, table: DataFrame, sink_end: dict[int, int]) -> DataFrame:
    """Per board: its newest board-detail record (``settled`` when the sink had committed it),
    its table rows, and what it adds to its hash bucket's count and sum of hashes on either
    side (the table's side only for settled boards). Fixed-width aggregates only, so Spark
    aggregates in a hash map rather than by sorting."""
    columns = ("board_id", "detail_partition", "detail_offset", "h")
    tag = F.col("tag")

    def newest(column: str) -> Column:
        of_detail = F.when(tag == "detail", F.col(column))
        return F.max_by(of_detail, F.when(tag == "detail", F.col("detail_offset"))).alias(column)

    per_board = (
        details.select(F.lit("detail").alias("tag"), *columns)
        .unionByName(table.select(F.lit("table").alias("tag"), *columns))
        .groupBy("board_id")
        .agg(
            F.count_if(tag == "detail").alias("n_detail"),
            F.count_if(tag == "table").alias("n_table"),
            *[newest(column) for column in ("detail_partition", "detail_offset", "h")],
            F.sum(F.when(tag == "table", F.col("h").cast(SUM))).alias("table_sum"),
        )
    )
    settled = (F.col("n_detail") > 0) & _below(sink_end)
    return per_board.select(
        "board_id",
        "n_detail",
        "n_table",
        settled.alias("settled"),
        ((F.col("n_detail") > 0) & (settled | (F.col("n_table") > 0))).alias("expected_in_table"),
        F.col("h").alias("newest_h"),
        _bucket(),
        F.when(settled, F.col("h").cast(SUM)).alias("ours_s"),
        F.when(settled, F.col("n_table")).otherwise(0).alias("theirs_n"),
        F.when(settled, F.col("table_sum")).alias("theirs_s"),
    )


def _differing_buckets(boards: DataFrame) -> list[int]:
    """Hash buckets whose settled boards' count or sum of hashes differs from their table rows'."""
    totals = boards.groupBy("bucket").agg(
        F.count_if("settled").alias("ours_n"),
        F.sum("ours_s").alias("ours_s"),
        F.sum("theirs_n").alias("theirs_n"),
        F.sum("theirs_s").alias("theirs_s"),
    )
    same = (F.col("ours_n") == F.col("theirs_n")) & F.col("ours_s").eqNullSafe(F.col("theirs_s"))
    return [row.bucket for row in totals.where(~same).select("bucket").collect()]


def _board_checks() -> dict[str, Column]:
    """The table against board-detail, per board; ``expected_table_rows`` is what the table
    should hold: every settled board, plus boards the sink has loaded since."""
    return {
        "duplicates": F.col("n_table") > 1,
        "missing_in_table": F.col("settled") & (F.col("n_table") == 0),
        "expected_table_rows": F.col("expected_in_table"),
    }


def _extra_in_table(boards: DataFrame) -> DataFrame:
    """Table rows of boards board-detail does not hold: one per row, a duplicate twice."""
    rows = F.array_repeat("board_id", F.col("n_table").cast("int"))
    return boards.where("n_detail = 0").select(F.explode(rows).alias("board_id"))


def _mismatched(table: DataFrame, boards: DataFrame, differing: list[int]) -> DataFrame:
    """Table rows of settled boards in the differing buckets whose content is not the board's
    newest record's: the drill into the buckets, row by row."""
    in_differing = F.col("bucket").isin(differing)
    ours = boards.where(F.col("settled") & in_differing).select("board_id", "newest_h")
    theirs = table.where(in_differing).select("board_id", "h")
    return theirs.join(ours, "board_id").where("h != newest_h").select("board_id")


def _read_table(settings: Settings, ends: dict[int, int]) -> pa.Table:
    """board_detail's rows below ``ends`` (by their own board-detail position) as an Arrow
    table typed like board-detail's records (through pandas, an integer column with a NULL
    would turn into floats and hash differently). Read with the DB driver's own cursor, in
    chunks straight into Arrow: SQLAlchemy's row objects added about a tenth."""
    names = [*CANONICAL, "detail_partition", "detail_offset"]
    types = {**dict(schema.OUTPUT), "detail_partition": "int", "detail_offset": "bigint"}
    arrow = pa.schema([(name, ARROW_TYPES[types[name]]) for name in names])
    engine = database.engine(settings.database)
    sink_table.create(engine)
    c = sink_table.board_detail.c
    below = (sa.and_(c.detail_partition == p, c.detail_offset < o) for p, o in ends.items())
    query = sa.select(*(c[name] for name in names)).where(sa.or_(sa.false(), *below))
    sql = str(query.compile(engine, compile_kwargs={"literal_binds": True}))
    batches = []
    with engine.connect() as connection:
        cursor = connection.connection.cursor()
        cursor.execute(sql)
        while rows := cursor.fetchmany(TABLE_CHUNK):
            columns = zip(*rows, strict=True)
            batches.append(pa.record_batch(list(map(pa.array, columns, arrow.types)), arrow))
        cursor.close()
    engine.dispose()
    return pa.Table.from_batches(batches, arrow)
