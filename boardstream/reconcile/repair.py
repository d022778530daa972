"""Repair what a reconciliation run found, with the stream's own code, then reconcile again.

Boards with no output at all are joined again in batch: the join's JVM-side parsing, then
:class:`~boardstream.joins.member_table.MemberTable` (the join's semantics) fed with their
members' records up to the snapshot, then the join's own Kafka serialization. Table findings
are repaired from ``board-detail`` with the sink's own upsert. Every write is idempotent, so a
repair that is interrupted or run twice does no harm.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import sqlalchemy as sa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from boardstream import database
from boardstream.errors import BoardstreamError
from boardstream.joins.job import BOARD_DETAIL_LAYOUT, kafka_rows
from boardstream.joins.member_table import LATEST, JoinOptions, MemberTable
from boardstream.joins.parse import parse, routed
from boardstream.joins.processor import OUTPUT_COLUMNS, OUTPUT_DDL, input_rows
from boardstream.joins.topics import JoinTopics
from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import describe_topics
from boardstream.reconcile.checks.spark_checks import ReconcileOptions
from boardstream.reconcile.evidence.run_ledger import RunLedger
from boardstream.reconcile.reads.readers import read_topic
from boardstream.reconcile.reads.snapshot import Snapshot
from boardstream.reconcile.run import check_snapshot, checkpoints
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import Settings
from boardstream.sink.job import BatchWriter, detail_rows

MAX_RECORD_BYTES = 256 * 1024


def stored_snapshot(engine: sa.Engine, runs: RunLedger, run_id: int) -> Snapshot:
    """What run ``run_id`` of ``runs``' pipeline saw."""
    run = runs.run(engine, run_id)
    if run is None:
        raise BoardstreamError(f"no reconciliation run {run_id} in {runs.run_table.name}")
    if not run["snapshot"]:
        raise BoardstreamError(
            f"reconciliation run {run_id} took no snapshot, so it has nothing to repair "
            f"({run['status']}: {run['error']})"
        )
    return Snapshot.from_json(run["snapshot"])


def repair(
    spark: SparkSession,
    settings: Settings,
    run_id: int,
    join_mode: str = LATEST,
    join_checkpoint: str | Path | None = None,
) -> dict[str, int]:
    """Fix the findings of run ``run_id`` with the join's own code (in ``join_mode``, reading
    pending boards from ``join_checkpoint``, by default the join job's); returns how many ids
    each step touched."""
    target = ReconcileTarget.shipped(settings)
    join_checkpoint = checkpoints(settings, target, join_checkpoint)[0]
    options = JoinOptions(mode=join_mode)
    engine = database.engine(settings.database)
    every = ReconcileOptions(examples=None)  # every id of each finding, not a few examples
    seen = stored_snapshot(engine, RunLedger.of(target.pipeline.name), run_id)
    found, snapshot, _ = check_snapshot(
        spark, engine, settings, target, seen, join_checkpoint, every
    )
    ids = {kind: f.examples for kind, f in found.findings.items()}
    # A board whose output expired unread is joined again: its record is then evidence anew.
    lost = set(ids["missing"]) | set(ids["expired_unseen"])
    rejoined = _rejoin(spark, settings, target.topics, snapshot, lost, options)
    reload = {
        board_id
        for kind in ("missing_in_table", "mismatched", "stale_in_table", "duplicates")
        for board_id in ids[kind]
    }
    _repair_table(spark, settings, target, reload | rejoined, set(ids["extra_in_table"]))
    return {
        "rejoined": len(rejoined),
        "reloaded": len(reload | rejoined),
        "deleted_extra": len(ids["extra_in_table"]),
    }


def _rejoin(
    spark: SparkSession,
    settings: Settings,
    topics: JoinTopics,
    snapshot: Snapshot,
    board_ids: set[str],
    options: JoinOptions,
) -> set[str]:
    """Join ``board_ids`` again from the source topics as of the snapshot."""
    if not board_ids:
        return set()
    board, member = topics.stream, topics.table
    boards = read_topic(
        spark, settings, board, snapshot.earliest[board], snapshot.join.of(board)
    ).where(F.col("key").cast("string").isin(sorted(board_ids)))
    parsed_boards = routed(parse(boards, member, board, MAX_RECORD_BYTES))
    board_rows = parsed_boards.toPandas()
    member_ids = sorted({int(m) for m in board_rows["member_id"].dropna()})
    members = read_topic(
        spark, settings, member, snapshot.earliest[member], snapshot.join.of(member)
    ).where(F.col("key").cast("string").isin([str(m) for m in member_ids]))
    member_rows = routed(parse(members, member, board, MAX_RECORD_BYTES))
    rows = pd.concat([member_rows.toPandas(), board_rows], ignore_index=True)
    valid = rows[rows["dead_letter"].isna()]
    now = int(snapshot.taken_at.timestamp() * 1000)
    table = MemberTable(options, {})
    out, _ = table.apply(input_rows(valid), now)
    out += table.expire(now + options.unmatched_timeout_ms)  # their members never came
    dead = [
        ("dead_letter", *([None] * (len(OUTPUT_COLUMNS) - 3)), key, letter)
        for key, letter in rows.loc[
            rows["dead_letter"].notna(), ["dead_key", "dead_letter"]
        ].itertuples(index=False)
    ]
    frame = spark.createDataFrame([(*row, None, None) for row in out] + dead, OUTPUT_DDL)
    kafka_rows(frame, topics, BOARD_DETAIL_LAYOUT).write.format("kafka").options(
        **settings.to_spark_kafka_sink_options()
    ).save()
    return {row[2] for row in out}  # board_id


def _repair_table(
    spark: SparkSession,
    settings: Settings,
    target: ReconcileTarget,
    reload: set[str],
    extra: set[str],
) -> None:
    """Delete the rows of every board to repair and of foreign ids, then upsert each reloaded
    board's board-detail records with the sink's own writer, which keeps the newest of them (its
    newest version in board, the checks' newest too). Deleting first matters: the upsert never
    replaces a row claiming a newer version, and a forged row may claim one."""
    engine = database.engine(settings.database)
    table = target.table.table
    with engine.begin() as connection:
        doomed = sorted(extra | reload)
        if doomed:
            key = table.c[target.layout.id_column]
            connection.execute(table.delete().where(key.in_(doomed)))
    if not reload:
        return
    detail = target.topics.joined
    raw = read_topic(spark, settings, detail, {}, _current_end(settings, detail)).where(
        F.col("key").cast("string").isin(sorted(reload))
    )
    writer = BatchWriter(settings)
    writer(detail_rows(raw, writer.target), -1)


def _current_end(settings: Settings, topic: str) -> dict[int, int]:
    (description,) = describe_topics(admin_client(settings), settings, [topic])
    return description.end_offsets
