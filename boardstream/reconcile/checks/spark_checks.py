"""The exact checks of one snapshot, as a Spark batch job over the Kafka connector.

A full run reads its inputs (:class:`CheckInputs`) from the topics, the join's state and the
whole table, and has Spark run the checks' one query (:mod:`.facts`) over them in one action
(or, up to ``reconcile_in_process_max_records``, DuckDB over them collected as Arrow):
the positions' holdings (the join's balance: every source position it read in exactly one
outcome, :mod:`.positions`), the per-board frame (every ``board_detail`` row against
``board-detail``, :mod:`.table_checks`) and the waiting boards of the join's state, each built
with one shuffle. Liveness (:mod:`.liveness`) and the table's types are checked beside it. A run
fails on anything it cannot prove: loss, a position in two outcomes, an output or a row nothing
accounts for, a stall, content or types that differ.

The checks read only their inputs: any set of frames that holds every record of the positions
and boards it names is checked exactly alike, which is how an incremental run checks the
records new data touches (:mod:`.arrow_checks`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from boardstream.joins.job import QUERY_NAME as JOIN
from boardstream.joins.member_table import JoinOptions
from boardstream.joins.topics import JoinTopics
from boardstream.locations import checkpoint_uri
from boardstream.reconcile.checks import facts as facts_query
from boardstream.reconcile.checks import liveness, positions, sql
from boardstream.reconcile.reads import expired, readers
from boardstream.reconcile.reads.expired import EXPIRED
from boardstream.reconcile.reads.readers import TableRead
from boardstream.reconcile.reads.snapshot import Snapshot
from boardstream.reconcile.reads.waiting import waiting_lines
from boardstream.reconcile.target import DEAD_LETTERED, JOINED, UNMATCHED, ReconcileTarget
from boardstream.settings import Settings
from boardstream.sink.job import QUERY_NAME as SINK
from boardstream.spark.checkpoint_files import CheckpointFiles
from boardstream.spark.checkpoint_guard import recorded_identity
from boardstream.timing import phase

logger = logging.getLogger(__name__)

EXAMPLES = 20  # ids kept per finding
# The balance's classes, per partition: source = read + not_yet_read, and read = the outcomes
# + missing + conflicting.
BALANCE = (
    "source",
    "read",
    "not_yet_read",
    *positions.OUTCOMES,
    "missing",
    "expired_unseen",
    "conflicting",
)
COUNTS = (
    *BALANCE,
    "expected_table_rows",
    "not_yet_loaded",
    "loaded_ahead",
    "sink_dead_lettered",
)
# The rows the table should hold (Great Expectations counts them): those its records call for,
# those whose record and source have both aged out (reported, never foreign: a pipeline months
# old holds mostly such rows, and its runs must not fail on them), and those a live sink loaded
# of records written after the snapshot (checked next run).
TABLE_ROWS = ("expected_table_rows", "unverifiable_in_table", "loaded_ahead")
# Findings that fail a run; then the ones that are reported only.
FAILING = (
    "missing",
    "expired_unseen",
    "conflicting",
    "extra",
    "altered_output",
    "unbalanced",
    "stalled",
    "overdue_pending",
    "stuck_pending",
    "referential",
    "duplicates",
    "missing_in_table",
    "extra_in_table",
    "mismatched",
    "stale_in_table",
    "moved_partition",
    "type_mismatch",
)
REPORTED = (
    "expired_evidence",
    "source_expired",
    "topic_replays",
    "unverifiable_in_table",
    "superseded",
)
FINDINGS = (*FAILING, *REPORTED)
# Kinds whose board ids are kept (examples), not only counted.
WITH_IDS = (
    *FINDINGS,
    "pending",
    "not_yet_read",
    "not_yet_loaded",
    "loaded_ahead",
    "sink_dead_lettered",
)
# One check holding on one key: a source position (partition, offset), or a board alone.
FACT_COLUMNS = ("kind", "partition", "offset", "board_id")


@dataclass(frozen=True)
class ReconcileOptions:
    """How long input may wait before a job counts as stalled (default: twice the pipeline's
    10-minute schedule), the join's unmatched timeout, and how many ids each finding keeps
    (all of them when None)."""

    stall_after_ms: int = 20 * 60 * 1000
    unmatched_timeout_ms: int = JoinOptions.unmatched_timeout_ms
    examples: int | None = EXAMPLES

    def __post_init__(self) -> None:
        if self.stall_after_ms < 0 or self.unmatched_timeout_ms < 0:
            raise ValueError("the stall age and the unmatched timeout must not be negative")
        if self.examples is not None and self.examples < 1:
            raise ValueError(f"examples must be at least 1, got {self.examples}")


@dataclass(frozen=True)
class Finding:
    count: int
    examples: list[str]  # sorted; up to the options' examples unless all were asked for


@dataclass
class Reconciliation:
    counts: dict[str, int]  # every COUNTS and FINDINGS kind
    findings: dict[str, Finding]  # every WITH_IDS kind
    balance: dict[int, dict[str, int]]  # per source partition, the BALANCE classes
    table_snapshot: pd.DataFrame = field(repr=False)  # board_id, member_id of board_detail
    # The oldest pending boards, with their age and when the unmatched timeout sends them on.
    waiting: list[str] = field(default_factory=list)
    # A full run's facts and records, which the run stores (the fact store, the digest ledger).
    facts: pa.Table | None = field(default=None, repr=False)
    records: Records | None = field(default=None, repr=False)

    @property
    def passed(self) -> bool:
        return all(self.findings[kind].count == 0 for kind in FAILING)

    @property
    def expected_table_rows(self) -> int:
        return sum(self.counts[kind] for kind in TABLE_ROWS)

    def difference_sets(self) -> dict[str, pd.DataFrame]:
        return {kind: pd.DataFrame({"board_id": self.findings[kind].examples}) for kind in FAILING}

    def equations(self) -> list[str]:
        """The balance of each partition, as a person checks it."""

        def unseen(c: dict[str, int]) -> str:  # only where outputs expired unread
            return f" + expired unseen {c['expired_unseen']:,}" if c["expired_unseen"] else ""

        return [
            f"board[{p}]: source {c['source']:,} = joined {c['joined']:,} + unmatched "
            f"{c['unmatched']:,} + dead-lettered {c['dead_lettered']:,} + pending "
            f"{c['pending']:,} + missing {c['missing']:,}{unseen(c)} + conflicting "
            f"{c['conflicting']:,} + not yet read {c['not_yet_read']:,}"
            for p, c in sorted(self.balance.items())
        ]


@dataclass(frozen=True)
class CheckInputs:
    """What the checks read, each frame with its reader's columns (:mod:`.readers`). A full run
    reads them from the topics as of the snapshot and from the whole table
    (:func:`read_inputs`); the checks depend on nothing else, so any set of frames that holds
    every record of the positions and boards it names is checked exactly alike."""

    sources: DataFrame  # readers.sources of board
    # The outputs, each with the ``expired`` flag: a record the topic deleted is evidence
    # (:mod:`.expired`).
    details: DataFrame  # readers.details of board-detail
    unmatched: DataFrame  # readers.unmatched of board-unmatched
    board_dead_letters: DataFrame  # readers.dead_letters of board records
    sink_dead_letters: DataFrame  # detail_partition, detail_offset the sink dead-lettered
    refused_members: DataFrame  # member_partition, member_offset the join dead-lettered
    members: DataFrame  # readers.members of member
    table: DataFrame  # board_id, detail_partition, detail_offset, digest, typed
    waiting: DataFrame  # readers.pending: the join's waiting boards
    table_read: TableRead  # the table's rows behind ``table``, and their type mismatches
    # Output records deleted before any run read them (expired.describe): while there are
    # any, a read position in no outcome is expired_unseen, not missing.
    unseen: tuple[str, ...] = ()
    # Frames cached for these inputs (some only behind the fields: the DLQ's records), which
    # :func:`release` drops.
    cached: tuple[DataFrame, ...] = ()


@dataclass(frozen=True)
class Records:
    """Records in the readers' columns (outputs with their own record position), as Arrow."""

    sources: pa.Table
    details: pa.Table
    unmatched: pa.Table
    dead_letters: pa.Table  # of board records
    refused: pa.Table  # reconcile_refused rows: the sink's of board-detail, the join's of member
    members: pa.Table

    @classmethod
    def of(cls, inputs: CheckInputs, target: ReconcileTarget) -> Records:
        """A full run's inputs, every record of them."""

        def refused(topic: str, frame: DataFrame) -> DataFrame:
            return frame.toDF("source_partition", "source_offset").select(
                F.lit(topic).alias("source_topic"), "source_partition", "source_offset"
            )

        def read(frame: DataFrame) -> pa.Table:
            """The records read from the topic: evidence of deleted ones is the ledger's
            already, or a table row's, which no run read as a record."""
            return frame.where(~F.col(EXPIRED)).drop(EXPIRED).toArrow()

        return cls(
            sources=inputs.sources.toArrow(),
            details=read(inputs.details),
            unmatched=read(inputs.unmatched),
            dead_letters=read(inputs.board_dead_letters),
            refused=refused(target.topics.joined, inputs.sink_dead_letters)
            .unionByName(refused(target.topics.table, inputs.refused_members))
            .toArrow(),
            members=inputs.members.toArrow(),
        )


def read_inputs(
    spark: SparkSession,
    target: ReconcileTarget,
    snapshot: Snapshot,
    join_checkpoint: str,
    table_read: TableRead,
    kept: expired.Kept,
    read: dict[str, DataFrame],
) -> CheckInputs:
    """Every record of the snapshot's topics (``read``: :func:`readers.read_snapshot`), with
    the evidence of what the output topics deleted (``kept`` and the table's rows:
    :mod:`.expired`), the join's waiting boards and ``table_read``'s rows; every frame is
    cached (:func:`release` them): the checks read some several times, and the digest ledger
    takes them all once more."""

    def topic(name: str) -> DataFrame:
        return read[name]

    def with_evidence(records: DataFrame, holder: str, more: pa.Table | None = None) -> DataFrame:
        found = kept.outputs[holder]
        if more is not None:
            found = pa.concat_tables([found, more.cast(found.schema)])
        flagged = records.withColumn(expired.EXPIRED, F.lit(False))
        if found.num_rows == 0:
            return flagged
        return flagged.unionByName(spark.createDataFrame(found))

    topics, layout = target.topics, target.layout
    table = readers.table_rows(spark, table_read, layout)
    loaded_from = expired.table_details(
        spark,
        layout,
        table_read.rows,
        snapshot.earliest.get(topics.joined, {}),
        snapshot.earliest.get(topics.stream, {}),
        _positions(kept.outputs[JOINED], ("detail_partition", "detail_offset")),
    )
    dead_letters = topic(topics.dead_letters).cache()  # three readers of it
    joined = readers.details(topic(topics.joined), layout)
    details = with_evidence(joined, JOINED, loaded_from).cache()
    # Cached: the checks read it three times and the summary once more.
    waiting = readers.pending(spark, layout, join_checkpoint, snapshot.join.batch_id).cache()
    sources = readers.sources(topic(topics.stream), layout).cache()
    unmatched = with_evidence(readers.unmatched(topic(topics.unmatched), layout), UNMATCHED)
    unmatched = unmatched.cache()
    members = readers.members(topic(topics.table), layout).cache()

    def refused(source_topic: str, prefix: str) -> DataFrame:
        # What an earlier run read of a dead letter the DLQ has deleted since, too.
        ledger = kept.refused.filter(pc.equal(kept.refused["source_topic"], source_topic))
        positions = readers.dead_letters(dead_letters, source_topic).select(
            "source_partition", "source_offset"
        )
        if ledger.num_rows:
            positions = positions.unionByName(
                spark.createDataFrame(ledger.select(["source_partition", "source_offset"]))
            ).distinct()
        return positions.select(
            F.col("source_partition").alias(f"{prefix}_partition"),
            F.col("source_offset").alias(f"{prefix}_offset"),
        )

    return CheckInputs(
        sources=sources,
        details=details,
        unmatched=unmatched,
        board_dead_letters=with_evidence(
            readers.dead_letters(dead_letters, topics.stream), DEAD_LETTERED
        ),
        sink_dead_letters=refused(topics.joined, "detail"),
        refused_members=refused(topics.table, "member"),
        members=members,
        table=table,
        waiting=waiting,
        table_read=table_read,
        unseen=expired.describe(kept.unseen),
        cached=(dead_letters, details, waiting, sources, unmatched, members),
    )


def _positions(rows: pa.Table, columns: tuple[str, str]) -> list[tuple[int, int]]:
    return list(zip(*(rows.column(c).to_pylist() for c in columns), strict=True))


def release(inputs: CheckInputs) -> None:
    """Drop the inputs' cached frames, then the checks' views of them and of their steps
    (the cached one with its view): dropping a view uncaches its frame, so before the checks'
    action had run the views' inputs were read again (a run at production scale lost 38 s that
    way)."""
    for frame in inputs.cached:
        frame.unpersist()
    for view in (*facts_query.VIEWS.values(), *facts_query.STEPS):
        inputs.sources.sparkSession.catalog.dropTempView(view)


def reconcile(
    spark: SparkSession,
    settings: Settings,
    target: ReconcileTarget,
    snapshot: Snapshot,
    join_checkpoint: str,
    kept: expired.Kept,
    read: dict[str, DataFrame],
    table_read: TableRead,
    options: ReconcileOptions | None = None,
) -> Reconciliation:
    """Check ``snapshot`` against the topics as ``read`` (:func:`readers.read_snapshot`, which
    gave the snapshot its start offsets) and what the ledger ``kept`` of the records they
    deleted, the join's state and the whole table as read (``table_read``: before the topics,
    so that a live sink has loaded as few rows of records past the snapshot as can be). The
    result keeps its facts and records (``facts``, ``records``) for the run to store."""
    options = options or ReconcileOptions()
    # Arrow for this session's pandas conversions (repair's toPandas too): row by row is minutes.
    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
    now_ms = int(time.time() * 1000)
    inputs = read_inputs(spark, target, snapshot, join_checkpoint, table_read, kept, read)
    in_process = readers.in_process(settings, snapshot, table_read)
    engine = "DuckDB, in process" if in_process else "Spark"
    logger.info(
        "the checks over %s records and rows run in %s (in process up to %s: "
        "BOARDSTREAM_RECONCILE_IN_PROCESS_MAX_RECORDS)",
        f"{readers.held(snapshot, table_read):,}",
        engine,
        f"{settings.reconcile_in_process_max_records:,}",
    )
    with phase("reconcile: the balance, the table and every check"):
        found = evaluate(
            inputs,
            settings,
            target.topics,
            snapshot,
            join_mode(spark, join_checkpoint),
            now_ms,
            options,
            in_process,
        )
    waiting = waiting_now(inputs.waiting, now_ms, options)
    with phase("reconcile: the records for the digest ledger"):
        records = Records.of(inputs, target)
    release(inputs)
    return conclude(
        fact_counts(found),
        lambda kind: fact_examples(found, kind, options.examples),
        settings,
        target.topics,
        snapshot,
        now_ms,
        options,
        readers.table_keys(table_read, target.layout),
        waiting,
        found,
        records,
    )


def conclude(
    counted: Mapping[tuple[str, int | None], int],
    examples: Callable[[str], list[str]],
    settings: Settings,
    topics: JoinTopics,
    snapshot: Snapshot,
    now_ms: int,
    options: ReconcileOptions,
    table_snapshot: pd.DataFrame,
    waiting: list[str],
    facts: pa.Table | None = None,
    records: Records | None = None,
) -> Reconciliation:
    """A run's verdict from its facts' counts per (kind, source partition or None) and the
    listing of a kind's facts (``examples``), with the jobs' liveness checked now: how a full
    run concludes from its own facts and an incremental run from the fact store's."""
    found, balance = summarize(counted, examples)
    with phase("reconcile: liveness"):
        stalls = _stalls(settings, topics, snapshot, now_ms, options.stall_after_ms)
    found["stalled"] = Finding(len(stalls), stalls)
    unbalanced = _unbalanced(balance)
    found["unbalanced"] = Finding(len(unbalanced), unbalanced)
    counts = {kind: found[kind].count for kind in (*COUNTS, *FINDINGS)}
    return Reconciliation(
        counts,
        {kind: found[kind] for kind in WITH_IDS},
        balance,
        table_snapshot,
        waiting,
        facts,
        records,
    )


def waiting_now(waiting: DataFrame, now_ms: int, options: ReconcileOptions) -> list[str]:
    """The oldest waiting boards as the summary lists them."""
    oldest = waiting.orderBy("arrived_ms", "board_id").select("board_id", "arrived_ms")
    if options.examples:
        oldest = oldest.limit(options.examples)
    return waiting_lines(
        [(row.board_id, row.arrived_ms) for row in oldest.collect()],
        now_ms,
        options.unmatched_timeout_ms,
    )


def evaluate(
    inputs: CheckInputs,
    settings: Settings,
    topics: JoinTopics,
    snapshot: Snapshot,
    join_mode: str | None,
    now_ms: int,
    options: ReconcileOptions,
    in_process: bool = False,
) -> pa.Table:
    """Every check on ``inputs``: the facts (FACT_COLUMNS and ``detail``), the table's type
    mismatches among them (a board fact each, its example as ``detail``). Spark runs the
    query in one action; ``in_process``, DuckDB runs it over the inputs collected as Arrow,
    without Spark's fixed cost per job and stage, which is most of a small run's time."""
    query_bounds = bounds(
        inputs.table_read, bool(inputs.unseen), topics, snapshot, join_mode, now_ms, options
    )
    if in_process:
        tables = {view: getattr(inputs, name).toArrow() for name, view in facts_query.VIEWS.items()}
        found = sql.in_duckdb(
            facts_query.query(query_bounds),
            tables,
            settings.reconcile_in_process_memory_mb,
            settings.reconcile_spill,
        )
    else:
        found = facts(inputs, query_bounds).toArrow()
    return with_type_mismatches(found, inputs.table_read)


def bounds(
    table_read: TableRead,
    unseen: bool,
    topics: JoinTopics,
    snapshot: Snapshot,
    join_mode: str | None,
    now_ms: int,
    options: ReconcileOptions,
) -> facts_query.Bounds:
    """What the checks' query needs of a run besides its inputs."""
    return facts_query.Bounds.of(
        topics,
        snapshot,
        table_read.detail_end,
        unseen,
        join_mode,
        now_ms,
        options.unmatched_timeout_ms,
        options.stall_after_ms,
    )


def with_type_mismatches(found: pa.Table, table_read: TableRead) -> pa.Table:
    """The facts ``found`` (FACT_COLUMNS) with a ``detail`` column, and a ``type_mismatch``
    board fact per type mismatch of ``table_read`` (its example as ``detail``)."""
    mismatches = sorted(table_read.mismatches, key=lambda m: (m.row_id, m.example()))
    typed = pa.table(
        {
            "kind": pa.array(["type_mismatch"] * len(mismatches), pa.string()),
            "partition": pa.nulls(len(mismatches), pa.int32()),
            "offset": pa.nulls(len(mismatches), pa.int64()),
            "board_id": pa.array([m.row_id for m in mismatches], pa.string()),
            "detail": pa.array([m.example() for m in mismatches], pa.string()),
        }
    )
    found = found.append_column("detail", pa.nulls(found.num_rows, pa.string()))
    return pa.concat_tables([found.cast(typed.schema), typed])


def fact_counts(facts: pa.Table) -> dict[tuple[str, int | None], int]:
    """``facts`` counted per (kind, source partition or None), as the fact store counts."""
    grouped = facts.group_by(["kind", "partition"]).aggregate([([], "count_all")])
    return {
        (kind, partition): n
        for kind, partition, n in zip(
            grouped.column("kind").to_pylist(),
            grouped.column("partition").to_pylist(),
            grouped.column("count_all").to_pylist(),
            strict=True,
        )
    }


def fact_examples(facts: pa.Table, kind: str, limit: int | None) -> list[str]:
    """``kind``'s facts as a run lists them (a fact's detail, else its board id), sorted by
    board, the first ``limit`` (all when None), as the fact store lists them."""
    mine = facts.filter(pc.and_(pc.equal(facts["kind"], kind), pc.is_valid(facts["board_id"])))
    mine = mine.sort_by([("board_id", "ascending"), ("detail", "ascending")])
    if limit:
        mine = mine.slice(0, limit)
    listed = pc.coalesce(mine["detail"], mine["board_id"])
    return listed.to_pylist()


def summarize(
    counted: Mapping[tuple[str, int | None], int], examples: Callable[[str], list[str]]
) -> tuple[dict[str, Finding], dict[int, dict[str, int]]]:
    """Every finding and count from the facts' counts: per kind, the number of facts and the
    listing (only the WITH_IDS kinds keep ids); per source partition, the balance's classes."""
    totals: dict[str, int] = {}
    balance: dict[int, dict[str, int]] = {}
    for (kind, partition), n in counted.items():
        totals[kind] = totals.get(kind, 0) + n
        if kind in BALANCE and partition is not None:
            balance.setdefault(partition, dict.fromkeys(BALANCE, 0))[kind] = n
    found = {
        kind: Finding(totals.get(kind, 0), examples(kind) if totals.get(kind) else [])
        for kind in (*COUNTS, *FINDINGS, *WITH_IDS)
        if kind not in ("stalled", "unbalanced")
    }
    return found, balance


def facts(inputs: CheckInputs, bounds: facts_query.Bounds) -> DataFrame:
    """Every check that holds on ``inputs``, one row each (FACT_COLUMNS): the query of
    :mod:`.facts`, over the inputs' frames as its views and its steps as views of their own,
    the one read twice cached; they stay until :func:`release`."""
    spark = inputs.sources.sparkSession
    for field_name, view in facts_query.VIEWS.items():
        getattr(inputs, field_name).createOrReplaceTempView(view)
    for name, step in facts_query.steps(bounds).items():
        frame = spark.sql(step)
        # Spark would compute a step read twice twice: each check prunes it differently.
        (frame.cache() if name == "boards" else frame).createOrReplaceTempView(name)
    return spark.sql(facts_query.found(bounds))


def join_mode(spark: SparkSession, checkpoint: str) -> str | None:
    """The join mode the join's checkpoint was written with (its recorded identity)."""
    return recorded_identity(CheckpointFiles(spark), checkpoint_uri(checkpoint)).get("join_mode")


def _stalls(
    settings: Settings, topics: JoinTopics, snapshot: Snapshot, now_ms: int, stall_after_ms: int
) -> list[str]:
    """The join and the sink, each against the topic it reads."""
    lines = []
    for job, progress, topic in (
        (JOIN, snapshot.join, topics.stream),
        (SINK, snapshot.sink, topics.joined),
    ):
        waiting = liveness.first_unread(settings, topic, progress.of(topic), snapshot.latest[topic])
        lines += liveness.stalled(job, progress, waiting, now_ms, stall_after_ms, snapshot.earlier)
    return lines


def _unbalanced(balance: dict[int, dict[str, int]]) -> list[str]:
    """Partitions whose classes do not add up (the classification is exclusive, so this
    guards the checks themselves)."""
    wrong = []
    for p, c in sorted(balance.items()):
        outcomes = sum(c[k] for k in BALANCE if k not in ("source", "read", "not_yet_read"))
        if c["read"] != outcomes or c["source"] != c["read"] + c["not_yet_read"]:
            wrong.append(f"board[{p}]: read {c['read']} vs {outcomes} classed")
    return wrong
