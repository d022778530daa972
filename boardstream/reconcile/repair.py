"""Repair what a reconciliation run found, with the stream's own code, then reconcile again,
for any declared pipeline.

Stream records with no output at all are joined again in batch: the join's own parsing, then
the JVM operator's per-key logic fed with their table rows' records up to the snapshot, then the
join's own Kafka serialization. Table findings are repaired from the joined topic with the
sink's own upsert. Every write is idempotent, so a repair that is interrupted or run twice does
no harm.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from boardstream import database
from boardstream.errors import BoardstreamError
from boardstream.joins import jvm_operator
from boardstream.joins.job import kafka_rows
from boardstream.joins.layout import JoinLayout
from boardstream.joins.member_table import JoinOptions
from boardstream.joins.parse import parse_declared, routed_declared
from boardstream.joins.schema import Contract
from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import describe_topics
from boardstream.reconcile.checks.spark_checks import ReconcileOptions
from boardstream.reconcile.evidence.run_ledger import RunLedger
from boardstream.reconcile.reads.readers import read_topic
from boardstream.reconcile.reads.snapshot import Snapshot
from boardstream.reconcile.run import check_snapshot, checkpoints
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import Settings
from boardstream.sink.job import BatchWriter, SinkTarget, detail_rows

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
    join_mode: str | None = None,
    join_checkpoint: str | Path | None = None,
    target: ReconcileTarget | None = None,
) -> dict[str, int]:
    """Fix the findings of run ``run_id`` of ``target`` (by default the shipped pipeline) with
    the join's own code (its declared join, in ``join_mode`` if given; reading pending records
    from ``join_checkpoint``, by default the join job's); returns how many ids each step
    touched."""
    target = ReconcileTarget.shipped(settings) if target is None else target
    join_checkpoint = checkpoints(settings, target, join_checkpoint)[0]
    mode = {} if join_mode is None else {"mode": join_mode}
    options = JoinOptions.of(target.pipeline.join, **mode)
    engine = database.engine(settings.database)
    every = ReconcileOptions(examples=None)  # every id of each finding, not a few examples
    seen = stored_snapshot(engine, RunLedger.of(target.pipeline.name), run_id)
    found, snapshot, _ = check_snapshot(
        spark, engine, settings, target, seen, join_checkpoint, every
    )
    ids = {kind: f.examples for kind, f in found.findings.items()}
    # A record whose output expired unread is joined again: its record is then evidence anew.
    lost = set(ids["missing"]) | set(ids["expired_unseen"])
    rejoined = _rejoin(spark, settings, target, snapshot, lost, options)
    reload = {
        record_id
        for kind in ("missing_in_table", "mismatched", "stale_in_table", "duplicates")
        for record_id in ids[kind]
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
    target: ReconcileTarget,
    snapshot: Snapshot,
    record_ids: set[str],
    options: JoinOptions,
) -> set[str]:
    """Join the stream records ``record_ids`` (Kafka keys) again from the source topics as of
    the snapshot, with the table records of the keys they name: the stream's own parsing, the
    operator's own per-key logic (:func:`~boardstream.joins.jvm_operator.rejoin`) and its own
    Kafka rows. Returns the ids joined or unmatched."""
    if not record_ids:
        return set()
    pipeline, topics = target.pipeline, target.topics
    contract, layout = Contract.of(pipeline), JoinLayout.of(pipeline)

    def routed(topic: str, keys: list[str]) -> DataFrame:
        raw = read_topic(
            spark, settings, topic, snapshot.earliest[topic], snapshot.join.of(topic)
        ).where(F.col("key").cast("string").isin(keys))
        parsed = parse_declared(raw, contract, topics.stream, topics.table, MAX_RECORD_BYTES)
        return routed_declared(parsed, pipeline, layout)

    stream = routed(topics.stream, sorted(record_ids)).cache()
    named = stream.where(F.col("kind") == "stream").select("join_key").distinct().collect()
    rows = stream.unionByName(routed(topics.table, sorted(str(row[0]) for row in named)))
    now = int(snapshot.taken_at.timestamp() * 1000)
    joined = jvm_operator.rejoin(rows, layout, options, now).cache()
    kafka_rows(joined, topics, layout).write.format("kafka").options(
        **settings.to_spark_kafka_sink_options()
    ).save()
    written = joined.where(F.col("outcome").isin("joined", "unmatched"))
    return {str(row[0]) for row in written.select(layout.id_column).collect()}


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
    writer = BatchWriter(settings, target=SinkTarget(target.pipeline, target.topics))
    writer(detail_rows(raw, writer.target), -1)


def _current_end(settings: Settings, topic: str) -> dict[int, int]:
    (description,) = describe_topics(admin_client(settings), settings, [topic])
    return description.end_offsets
