"""Drain a production-scale backlog through the join and the sink; print rates and state size.

    .venv/bin/boardstream stack up
    .venv/bin/python bench/join_backlog.py             # 442,128 members + 447,017 boards
    .venv/bin/python bench/join_backlog.py --scale 0.1

Produces the seeded backlog into fresh topics, then runs, each available-now in one local Spark
session: the join (member + board → board-detail) and the sink (board-detail → board_detail in
BOARDSTREAM_DATABASE_URL, SQLite under var/ by default). It prints a Markdown table: records,
seconds, records/s per stage and end to end, and the peak state rows and memory the join
reported.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import time

from boardstream.generator.plan import PRODUCTION_BOARDS, PRODUCTION_MEMBERS, GeneratorOptions
from boardstream.generator.producer import produce
from boardstream.joins.job import QUERY_NAME as JOIN
from boardstream.joins.job import JoinJobConfig, start_join
from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import create_topics, platform_topics
from boardstream.settings import Settings
from boardstream.sink.job import QUERY_NAME as SINK
from boardstream.sink.job import SinkJobConfig, start_sink
from boardstream.spark.progress import JsonlProgressListener, read_progress
from boardstream.spark.session import spark_session
from boardstream.spark.streaming import progress_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of production scale")
    args = parser.parse_args()
    run = time.strftime("%Y%m%d%H%M%S")
    base = Settings()
    settings = base.with_topic_prefix(
        f"bench-{run}", var_dir=base.var_dir / "bench" / run, jar_cache=base.jars_dir
    )
    admin = admin_client(settings)
    create_topics(admin, settings, platform_topics(settings))
    options = GeneratorOptions(
        members=round(PRODUCTION_MEMBERS * args.scale),
        boards=round(PRODUCTION_BOARDS * args.scale),
        seed=1,
    )
    manifest = produce(settings, options, settings.var_dir / "manifest.json", 5.0)
    records = sum(manifest.counts.values())

    spark = spark_session(settings, "bench-join-backlog")
    spark.sparkContext.setLogLevel("ERROR")
    spark.streams.addListener(JsonlProgressListener(progress_dir(settings)))
    timings = {}
    for name, start in (
        (JOIN, lambda: start_join(spark, settings, JoinJobConfig())),
        (SINK, lambda: start_sink(spark, settings, SinkJobConfig())),
    ):
        began = time.perf_counter()
        query = start()
        query.awaitTermination()
        assert query.exception() is None, query.exception()
        timings[name] = time.perf_counter() - began
        print(f"{name}: {timings[name]:.1f}s", flush=True)
    time.sleep(1)  # the listener writes the last progress event asynchronously
    join_progress = read_progress(progress_dir(settings), JOIN)
    peak_rows = max((p["state_rows"] for p in join_progress), default=0)
    peak_bytes = max((p["state_sst_bytes"] for p in join_progress), default=0)
    boards = manifest.counts.get("boards", 0)
    total = sum(timings.values())
    machine = f"{platform.machine()}, {os.cpu_count()} cores"
    print(f"\n{records:,} input records ({boards:,} boards); {machine}")
    print("| stage | records | seconds | records/s |\n|---|---:|---:|---:|")
    for stage, count, seconds in (
        ("join (member + board → board-detail)", records, timings[JOIN]),
        ("sink (board-detail → board_detail)", boards, timings[SINK]),
        ("end to end", records, total),
    ):
        print(f"| {stage} | {count:,} | {seconds:.1f} | {count / seconds:,.0f} |")
    state = f"{peak_rows:,} rows (buckets), {peak_bytes / 1e6:,.1f} MB of RocksDB SST files"
    print(f"\npeak join state: {state}")
    for spec in platform_topics(settings):
        admin.delete_topics([spec.name])
    shutil.rmtree(settings.var_dir / "checkpoints", ignore_errors=True)


if __name__ == "__main__":
    main()
