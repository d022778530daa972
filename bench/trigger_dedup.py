"""How a longer trigger dedups updates to the same key: boards per member (the table-count job)
over one backlog, with micro-batches of different sizes, side by side in one Spark session.

    .venv/bin/boardstream stack up
    .venv/bin/python bench/trigger_dedup.py [--scale 0.05]

A batch writes one record per member whose count changed in it, however often it changed: like
Kafka Streams' record cache, flushed on commit. ``--max-offsets-per-trigger`` stands in for the
trigger interval (a continuous job at a steady input rate reads rate x interval records per
batch). Prints, per batch size: batches, output records, records per input, seconds.
"""

from __future__ import annotations

import argparse
import time

from backlog import produce_backlog
from confluent_kafka import Consumer, TopicPartition

from boardstream.aggregations.source import SourceOptions
from boardstream.aggregations.table_count import TableCountConfig, start_table_count
from boardstream.settings import Settings
from boardstream.spark.session import spark_session


def count_records(settings: Settings, topic: str) -> int:
    consumer = Consumer({**settings.to_confluent(), "group.id": "bench-count"})
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    total = sum(
        consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions
    )
    consumer.close()
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.05, help="fraction of production scale")
    parser.add_argument("--batches", type=int, nargs="+", default=[1_000, 10_000, 0])
    args = parser.parse_args()
    settings, manifest = produce_backlog("trigger-dedup", args.scale)
    boards = manifest.counts.get("boards", 0)
    spark = spark_session(settings, "bench-trigger-dedup")
    spark.sparkContext.setLogLevel("ERROR")
    print("| records per batch | batches | output records | output per board | seconds |")
    print("|---|---:|---:|---:|---:|")
    for size in args.batches:
        label = f"{size:,}" if size else "all (one batch)"
        output = f"{settings.board_topic}-per-member-{size}"
        config = TableCountConfig(
            source=SourceOptions(settings.board_topic, "member_id", None, size or None),
            output_topic=output,
            checkpoint=settings.var_dir / "checkpoints" / output,
        )
        began = time.perf_counter()
        query = start_table_count(spark, settings, config)
        query.awaitTermination()
        assert query.exception() is None, query.exception()
        seconds = time.perf_counter() - began
        batches = len(query.recentProgress)
        written = count_records(settings, output)
        print(f"| {label} | {batches:,} | {written:,} | {written / boards:.2f} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
