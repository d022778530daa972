"""The exact checks of one snapshot, as a Spark batch job over the Kafka connector.

Every source board is identified by its position (partition, offset) in ``board``, which is what
each output records as provenance: ``board-detail`` and ``board-unmatched`` carry
``board_partition``/``board_offset``, a dead letter its ``partition``/``offset``. A board the
join has read but still holds (waiting for its member) is read from the join's own state store.
So "missing" means: read by the join, yet in no output and not waiting; nothing is inferred
from counts or offset differences.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

import pandas as pd
import pyarrow as pa
import sqlalchemy as sa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from pyspark.sql.window import Window

from boardstream import database
from boardstream.joins import schema
from boardstream.reconcile.snapshot import Snapshot
from boardstream.settings import Settings
from boardstream.sink import table as sink_table
from boardstream.timing import phase

EXAMPLES = 20  # ids kept per finding
HASH_BUCKETS = 1024
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


def _between(snapshot: Snapshot, topic: str, upper: dict[int, int] | None = None) -> tuple:
    return snapshot.earliest.get(topic, {}), upper if upper is not None else snapshot.latest[topic]


def reconcile(
    spark: SparkSession,
    settings: Settings,
    snapshot: Snapshot,
    join_checkpoint: str,
    examples: int | None = EXAMPLES,
) -> Reconciliation:
    """Check ``snapshot``; each finding keeps ``examples`` ids (all of them when None)."""
    # Arrow for the table's round trip between pandas and Spark (row by row is minutes).
    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
    board, detail_topic = settings.board_topic, settings.board_detail_topic
    everything = _sources(read_topic(spark, settings, board, *_between(snapshot, board)))
    join_end = snapshot.join.of(board)
    processed = everything.where(
        _any((F.col("p") == p) & (F.col("o") < o) for p, o in join_end.items())
    )
    details = _outputs(read_topic(spark, settings, detail_topic, *_between(snapshot, detail_topic)))
    unmatched = _outputs(
        read_topic(
            spark, settings, settings.unmatched_topic, *_between(snapshot, settings.unmatched_topic)
        )
    )
    dlq = (
        read_topic(spark, settings, settings.dlq_topic, *_between(snapshot, settings.dlq_topic))
        .select(F.from_json(F.col("value").cast("string"), DLQ_SCHEMA).alias("d"))
        .where(F.col("d.source_topic") == board)
        .select(F.col("d.partition").alias("p"), F.col("d.offset").alias("o"))
    )
    pending = _pending(spark, join_checkpoint, snapshot.join.batch_id)
    with phase("reconcile: read the snapshot's records"):
        for frame in (everything, details, unmatched, dlq, pending):
            frame.cache().count()  # materialized once; every check below reads the cache

    positions = ["p", "o"]
    accounted = (
        reduce(
            DataFrame.unionByName,
            [
                details.select(*positions),
                unmatched.select(*positions),
                dlq,
                pending.select(*positions),
            ],
        )
        .distinct()
        .cache()
    )
    outputs = details.unionByName(unmatched.select(details.columns))
    # A source board below the topic's earliest offset was deleted by retention: its outputs
    # can no longer be checked against it, which is reported, not called extra.
    retained = _any(
        (F.col("p") == p) & (F.col("o") >= start) for p, start in snapshot.earliest[board].items()
    )
    replays = details.groupBy(*positions).agg(
        F.count("*").alias("n"), F.first("board_id").alias("board_id")
    )
    in_flight = everything.join(processed, positions, "left_anti").join(
        accounted, positions, "left_anti"
    )
    members = read_topic(
        spark, settings, settings.member_topic, *_between(snapshot, settings.member_topic)
    )
    member_ids = members.select(
        F.col("key").cast("string").cast("bigint").alias("member_id")
    ).distinct()
    table, table_checks = _check_table(spark, settings, snapshot, details)
    should_hold = table_checks.pop("expected_table_rows")
    findings = {
        "missing": processed.join(accounted, positions, "left_anti"),
        "extra": outputs.where(retained).join(everything, positions, "left_anti"),
        "source_expired": outputs.where(~retained),
        "topic_replays": replays.where("n > 1"),
        "in_flight": in_flight.unionByName(pending.select(in_flight.columns)),
        "referential": details.join(member_ids, "member_id", "left_anti"),
        **table_checks,
    }
    counted = {
        "source": processed,
        "joined": details.select(*positions).distinct(),
        "unmatched": unmatched.select(*positions).distinct(),
        "dead_lettered": dlq.distinct(),
        "pending": pending,
        "expected_table_rows": should_hold,
    }
    with phase("reconcile: exact checks"):
        evaluated = _evaluate(findings, counted, examples)
    counts = {kind: evaluated[kind].count for kind in [*counted, *findings]}
    expected_rows = counts.pop("expected_table_rows")
    table_snapshot = table.select("board_id", "member_id").toPandas()
    return Reconciliation(
        counts, {kind: evaluated[kind] for kind in findings}, table_snapshot, expected_rows
    )


def _evaluate(
    findings: dict[str, DataFrame], counted: dict[str, DataFrame], examples: int | None
) -> dict[str, Finding]:
    """Every finding and count in one Spark job: per kind, the number of rows and the sorted
    board ids (only for findings; ``examples`` of them, or all)."""
    tagged = [
        frame.select(
            F.lit(kind).alias("kind"),
            (
                F.col("board_id").cast("string") if kind in findings else F.lit(None).cast("string")
            ).alias("id"),
        )
        for kind, frame in {**findings, **counted}.items()
    ]
    ids = F.array_sort(F.collect_list("id"))
    rows = (
        reduce(DataFrame.unionByName, tagged)
        .groupBy("kind")
        .agg(F.count("*").alias("n"), (F.slice(ids, 1, examples) if examples else ids).alias("ids"))
        .collect()
    )
    found = {row.kind: Finding(row.n, list(row.ids)) for row in rows}
    return {kind: found.get(kind, Finding(0, [])) for kind in {**findings, **counted}}


def _sources(raw: DataFrame) -> DataFrame:
    return raw.select(
        F.col("key").cast("string").alias("board_id"),
        F.col("partition").alias("p"),
        F.col("offset").alias("o"),
    )


def _outputs(raw: DataFrame) -> DataFrame:
    d = F.from_json(F.col("value").cast("string"), OUTPUT_SCHEMA)
    return raw.select(d.alias("d"), "partition", "offset").select(
        *[F.col(f"d.{name}").alias(name) for name in CANONICAL],
        F.col("d.board_partition").alias("p"),
        F.col("d.board_offset").alias("o"),
        F.col("partition").alias("detail_partition"),
        F.col("offset").alias("detail_offset"),
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


def _any(conditions: Iterable[Column]) -> Column:
    return reduce(lambda a, b: a | b, conditions, F.lit(False))


def _below(ends: dict[int, int]) -> Column:
    """board-detail rows (by their own partition and offset) below ``ends``."""
    return _any(
        (F.col("detail_partition") == p) & (F.col("detail_offset") < o) for p, o in ends.items()
    )


def _row_hash(frame: DataFrame) -> DataFrame:
    """board_id, a hash of the canonical columns, and the board's hash bucket."""
    text = [F.coalesce(F.col(c).cast("string"), F.lit("\u0000")) for c in CANONICAL]
    return frame.select(
        "board_id",
        F.xxhash64(F.concat_ws("\u0001", *text)).alias("h"),
        F.pmod(F.xxhash64("board_id"), F.lit(HASH_BUCKETS)).alias("bucket"),
    )


def _check_table(
    spark: SparkSession,
    settings: Settings,
    snapshot: Snapshot,
    details: DataFrame,
) -> tuple[DataFrame, dict[str, DataFrame]]:
    """board_detail against board-detail: the table holds, per board, the newest board-detail
    record the sink had committed, once, with the same content."""
    detail_topic = settings.board_detail_topic
    latest = snapshot.latest[detail_topic]
    sink_end = snapshot.sink.of(detail_topic)
    newest = F.row_number().over(
        Window.partitionBy("board_id").orderBy(F.col("detail_offset").desc())
    )
    expected = details.withColumn("rank", newest).where("rank = 1").drop("rank").cache()
    settled = expected.where(_below(sink_end))

    detail_schema = details.select(*CANONICAL, "detail_partition", "detail_offset").schema
    with phase("reconcile: read board_detail"):
        table = spark.createDataFrame(_read_table(settings, detail_schema))
        table = table.where(_below(latest)).cache()
        table.count()

    findings = {
        "duplicates": table.groupBy("board_id").count().where("count > 1"),
        "missing_in_table": settled.join(table, "board_id", "left_anti"),
        "extra_in_table": table.join(expected, "board_id", "left_anti"),
    }
    ours, theirs = (
        _row_hash(settled),
        _row_hash(table.join(settled.select("board_id"), "board_id")),
    )
    sums = [F.count("*").alias("n"), F.sum(F.col("h").cast("decimal(38,0)")).alias("s")]
    a, b = ours.groupBy("bucket").agg(*sums), theirs.groupBy("bucket").agg(*sums)
    differing = (
        a.join(b, "bucket", "full_outer")
        .where(~(a.n.eqNullSafe(b.n) & a.s.eqNullSafe(b.s)))
        .select("bucket")
    )
    drill = (
        ours.join(differing, "bucket")
        .alias("x")
        .join(theirs.join(differing, "bucket").alias("y"), "board_id")
    )
    findings["mismatched"] = drill.where(F.col("x.h") != F.col("y.h"))
    # What the table should hold: every settled board, plus boards the sink has loaded since.
    loaded = expected.join(table.select("board_id"), "board_id", "left_semi")
    findings["expected_table_rows"] = (
        settled.select("board_id").union(loaded.select("board_id")).distinct()
    )
    return table, findings


def _read_table(settings: Settings, schema: StructType) -> pa.Table:
    """board_detail as an Arrow table typed like board-detail's rows (through pandas, an
    integer column with a NULL would turn into floats and hash differently)."""
    arrow_types = {"string": pa.string(), "bigint": pa.int64(), "int": pa.int32()}
    engine = database.engine(settings.database)
    sink_table.create(engine)
    columns: list[Any] = [sink_table.board_detail.c[f.name] for f in schema]
    with engine.connect() as connection:
        rows = connection.execute(sa.select(*columns)).all()
    engine.dispose()
    values = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
    return pa.table(
        {
            f.name: pa.array(column, arrow_types[f.dataType.simpleString()])
            for f, column in zip(schema, values, strict=True)
        }
    )
