"""The board-detail join job: ``member`` + ``board`` → ``board-detail`` / ``-unmatched`` / ``-dlq``.

One Kafka source reads both topics, so one checkpoint tracks both. Records are parsed on the
JVM; malformed ones go straight to the DLQ, the rest are grouped by member_id into
:class:`~boardstream.joins.processor.BoardMemberJoin` on the RocksDB state store.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from boardstream.argtypes import duration_ms, positive
from boardstream.joins import schema
from boardstream.joins.member_table import AS_OF, LATEST, JoinOptions
from boardstream.joins.parse import parse, routed
from boardstream.joins.processor import DEAD_LETTER_BUCKET, OUTPUT_DDL, BucketedMemberJoin
from boardstream.settings import Settings
from boardstream.spark import streaming

QUERY_NAME = "board-detail-join"


@dataclass(frozen=True)
class JoinJobConfig:
    options: JoinOptions = field(default_factory=JoinOptions)
    trigger: str = streaming.AVAILABLE_NOW
    interval: str = "1 second"
    max_record_bytes: int = 256 * 1024
    max_offsets_per_trigger: int | None = None
    checkpoint: Path | None = None
    # Members share a state row per bucket: fewer, larger rows mean fewer state round trips per
    # micro-batch (docs/BENCHMARKS.md: 128 beat 32 and 1,024 on drain time and steady latency).
    state_buckets: int = 128

    def checkpoint_dir(self, settings: Settings) -> Path:
        return self.checkpoint or settings.checkpoints / QUERY_NAME


def join_output(spark: SparkSession, settings: Settings, config: JoinJobConfig) -> DataFrame:
    """Kafka rows (topic, key, value) for all three outputs."""
    raw = streaming.kafka_stream(
        spark,
        settings,
        [settings.member_topic, settings.board_topic],
        config.max_offsets_per_trigger,
    )
    parsed = parse(raw, settings.member_topic, settings.board_topic, config.max_record_bytes)
    bucket = (
        F.when(F.col("dead_letter").isNotNull(), F.lit(DEAD_LETTER_BUCKET))
        .otherwise(F.pmod(F.xxhash64("member_id"), F.lit(config.state_buckets)))
        .cast("int")
    )
    joined = (
        routed(parsed)
        .withColumn("bucket", bucket)  # last, so rows keep schema.INPUT's positions
        .groupBy("bucket")
        .transformWithStateInPandas(
            statefulProcessor=BucketedMemberJoin(config.options),
            outputStructType=OUTPUT_DDL,
            outputMode="Append",
            timeMode="ProcessingTime",
        )
    )
    return kafka_rows(joined, settings)


def kafka_rows(joined: DataFrame, settings: Settings) -> DataFrame:
    """The processor's output (OUTPUT_DDL rows) as Kafka rows (topic, key, value), routed by
    outcome; shared by the stream and by repair, so both write identical records."""
    outcome = F.col("outcome")
    payload = [name for name in schema.names(schema.OUTPUT) if name != "outcome"]
    return joined.select(
        F.when(outcome == "joined", settings.board_detail_topic)
        .when(outcome == "unmatched", settings.unmatched_topic)
        .otherwise(settings.dlq_topic)
        .alias("topic"),
        F.coalesce(F.unbase64("dead_key"), F.col("board_id").cast("binary")).alias("key"),
        F.coalesce(F.col("dead_letter"), F.to_json(F.struct(*payload))).alias("value"),
    )


def start_join(spark: SparkSession, settings: Settings, config: JoinJobConfig) -> StreamingQuery:
    streaming.configure_no_data_batches(spark, config.trigger)
    return streaming.start_to_kafka(
        join_output(spark, settings, config),
        settings,
        QUERY_NAME,
        config.checkpoint_dir(settings),
        config.trigger,
        config.interval,
        {
            "sources": [settings.member_topic, settings.board_topic],
            "outputs": [settings.board_detail_topic, settings.unmatched_topic, settings.dlq_topic],
            "state_buckets": config.state_buckets,
            "join_mode": config.options.mode,
        },
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="board_detail_join", description=__doc__.splitlines()[0])
    parser.add_argument("--join-mode", choices=[LATEST, AS_OF], default=LATEST)
    streaming.add_query_arguments(parser, max_offsets=None)
    parser.add_argument("--unmatched-timeout", type=duration_ms, default="10m")
    parser.add_argument("--history-retention", type=duration_ms, default="7d", help="as-of mode")
    parser.add_argument("--deleted-retention", type=duration_ms, default="7d")
    parser.add_argument("--max-pending-per-member", type=positive, default=10_000)
    parser.add_argument("--max-record-bytes", type=positive, default=256 * 1024)
    parser.add_argument(
        "--state-buckets",
        type=positive,
        default=JoinJobConfig.state_buckets,
        help="fixed for the life of a checkpoint",
    )
    return parser


def config_from_args(args: argparse.Namespace) -> JoinJobConfig:
    return JoinJobConfig(
        options=JoinOptions(
            mode=args.join_mode,
            unmatched_timeout_ms=args.unmatched_timeout,
            max_pending_per_member=args.max_pending_per_member,
            history_retention_ms=args.history_retention,
            deleted_retention_ms=args.deleted_retention,
        ),
        max_record_bytes=args.max_record_bytes,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
        state_buckets=args.state_buckets,
        **streaming.query_options(args),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
        config.options.validate()
    except ValueError as error:
        parser.error(str(error))
    return streaming.run_job(
        QUERY_NAME, lambda spark, settings: start_join(spark, settings, config)
    )
