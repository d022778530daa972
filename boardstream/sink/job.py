"""The board-detail sink job: ``board-detail`` → table ``board_detail``, idempotently.

A streaming query over ``board-detail`` whose ``foreachBatch`` upserts each micro-batch in one
transaction. Offsets are committed to the checkpoint only after the transaction, so a crash
replays the batch, and the upsert makes the replay harmless. A record that is not a valid detail
goes to the DLQ, never silently away.
"""

from __future__ import annotations

import argparse
import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from sqlalchemy import make_url

from boardstream import database
from boardstream.errors import BoardstreamError
from boardstream.failpoints import failpoint
from boardstream.joins import schema
from boardstream.kafka.clients import DeliveryErrors, reliable_producer
from boardstream.settings import Settings
from boardstream.sink import table
from boardstream.spark import streaming
from boardstream.spark.checkpoint_guard import guard_checkpoint

QUERY_NAME = "board-detail-sink"
DETAIL_SCHEMA = schema.ddl(tuple(c for c in schema.OUTPUT if c[0] != "outcome"))


@dataclass(frozen=True)
class SinkJobConfig:
    trigger: str = streaming.AVAILABLE_NOW
    interval: str = "1 second"
    # Each batch is collected to the driver for the upsert: bound it.
    max_offsets_per_trigger: int | None = 100_000
    checkpoint: Path | None = None

    def checkpoint_dir(self, settings: Settings) -> Path:
        return self.checkpoint or settings.checkpoints / QUERY_NAME


def detail_rows(raw: DataFrame) -> DataFrame:
    parsed = F.from_json(F.col("value").cast("string"), DETAIL_SCHEMA)
    return raw.select(
        parsed.alias("d"),
        F.col("partition").alias("detail_partition"),
        F.col("offset").alias("detail_offset"),
        "key",
        "value",
    )


class BatchWriter:
    """``foreachBatch`` callback: upsert valid rows, dead-letter the rest."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.engine = database.engine(settings.database)
        table.create(self.engine)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        valid = F.col("d.board_id").isNotNull() & F.col("d.member_id").isNotNull()
        columns = [c for c in table.COLUMNS if c not in ("detail_partition", "detail_offset")]
        collected = batch.select(
            valid.alias("valid"),
            *[F.col(f"d.{c}").alias(c) for c in columns],
            "detail_partition",
            "detail_offset",
            F.when(~valid, F.col("key")).alias("bad_key"),  # original bytes only when needed
            F.when(~valid, F.col("value")).alias("bad_value"),
        ).toArrow()
        rows = collected.to_pylist()
        table.upsert(self.engine, [r for r in rows if r["valid"]])
        self._dead_letter([r for r in rows if not r["valid"]])
        failpoint("sink.after_write")  # written, offsets not yet committed: a replay follows

    def _dead_letter(self, invalid: list[dict]) -> None:
        if not invalid:
            return
        errors = DeliveryErrors()
        producer = reliable_producer(self.settings, on_delivery=errors)
        for row in invalid:
            envelope = {
                "error": "not a board-detail record (board_id or member_id missing)",
                "source_topic": self.settings.board_detail_topic,
                "partition": row["detail_partition"],
                "offset": row["detail_offset"],
                "key_base64": _b64(row["bad_key"]),
                "value_base64": _b64(row["bad_value"]),
            }
            producer.produce(self.settings.dlq_topic, json.dumps(envelope), row["bad_key"])
        if producer.flush(self.settings.connect_timeout_s * 3) or errors.count:
            raise BoardstreamError(f"dead-lettering board-detail records failed: {errors.first}")


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def start_sink(spark: SparkSession, settings: Settings, config: SinkJobConfig) -> StreamingQuery:
    checkpoint = config.checkpoint_dir(settings)
    # Another database on the same checkpoint would never receive the rows loaded before.
    database = make_url(settings.database).render_as_string(hide_password=True)
    guard_checkpoint(
        checkpoint,
        {"query": QUERY_NAME, "source": settings.board_detail_topic, "database": database},
    )
    raw = streaming.kafka_stream(
        spark, settings, [settings.board_detail_topic], config.max_offsets_per_trigger
    )
    writer = (
        detail_rows(raw)
        .writeStream.queryName(QUERY_NAME)
        .foreachBatch(BatchWriter(settings))
        .option("checkpointLocation", str(checkpoint))
    )
    return streaming.with_trigger(writer, config.trigger, config.interval).start()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="board_detail_sink", description=__doc__.splitlines()[0])
    streaming.add_query_arguments(parser, max_offsets=SinkJobConfig.max_offsets_per_trigger)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    config = SinkJobConfig(
        args.trigger, args.interval, args.max_offsets_per_trigger, args.checkpoint
    )
    return streaming.run_job(
        QUERY_NAME, lambda spark, settings: start_sink(spark, settings, config)
    )
