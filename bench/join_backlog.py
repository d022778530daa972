"""Drain a production-scale backlog through the join and the sink; print rates and state size.

    .venv/bin/boardstream stack up
    .venv/bin/python bench/join_backlog.py             # 442,128 members + 447,017 boards
    .venv/bin/python bench/join_backlog.py --scale 0.1 --modes pipelined

Produces the seeded backlog once, then drains it in each mode, side by side, each into its own
output topics, checkpoints and board_detail table (BOARDSTREAM_DATABASE_URL, SQLite under var/
by default), in one local Spark session:

- ``sequential``: the join available-now, then the sink available-now (how a scheduler that
  runs one job after the other sees it);
- ``pipelined``: the join available-now while the sink runs continuously beside it, reading
  ``board-detail`` as the join writes it (how the two streaming jobs run in production); the
  clock stops when the sink has loaded everything the join wrote.

It prints a Markdown table (records, seconds, records/s per stage and end to end) and the peak
state rows and memory the join reported.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable

from backlog import drop_backlog, produce_backlog
from pyspark.sql import SparkSession

from boardstream import joins, sink
from boardstream.joins.job import QUERY_NAME as JOIN
from boardstream.joins.job import JoinJobConfig
from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import create_topics, platform_topics
from boardstream.settings import Settings
from boardstream.sink.job import SinkJobConfig
from boardstream.spark.progress import ProgressListener
from boardstream.spark.session import spark_session
from boardstream.spark.streaming import PROCESSING_TIME
from boardstream.stream_progress import ProgressStore

MODES = ("pipelined", "sequential")


def timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def await_clean(query) -> None:
    query.awaitTermination()
    assert query.exception() is None, query.exception()


def sequential(spark: SparkSession, settings: Settings, join: JoinJobConfig) -> dict[str, float]:
    join_s = timed(lambda: await_clean(joins.start(spark, settings, join)))
    with sink.leased(settings, SinkJobConfig()):
        sink_s = timed(lambda: await_clean(sink.start(spark, settings, SinkJobConfig())))
    return {"join": join_s, "sink": sink_s, "end to end": join_s + sink_s}


def pipelined(spark: SparkSession, settings: Settings, join: JoinJobConfig) -> dict[str, float]:
    config = SinkJobConfig(trigger=PROCESSING_TIME, interval="2 seconds")
    with sink.leased(settings, config):
        began = time.perf_counter()
        loading = sink.start(spark, settings, config)
        await_clean(joins.start(spark, settings, join))
        join_s = time.perf_counter() - began
        loading.processAllAvailable()  # everything the join wrote is loaded
        total = time.perf_counter() - began
        loading.stop()
    assert loading.exception() is None, loading.exception()
    return {"join": join_s, "sink (after the join ended)": total - join_s, "end to end": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of production scale")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--state-buckets", type=int, default=JoinJobConfig.state_buckets)
    args = parser.parse_args()
    source, manifest = produce_backlog("bench", args.scale)
    admin = admin_client(source)
    prefix = source.member_topic.removesuffix("-member")
    records = sum(manifest.counts.values())
    boards = manifest.counts.get("boards", 0)

    spark = spark_session(source, "bench-join-backlog")
    spark.sparkContext.setLogLevel("ERROR")
    machine = f"{platform.machine()}, {os.cpu_count()} cores"
    print(f"\n{records:,} input records ({boards:,} boards); {machine}", flush=True)
    for index, mode in enumerate(args.modes):
        # Same input topics; outputs, checkpoints and database of this mode only.
        settings = source.with_topic_prefix(
            f"{prefix}-{index}{mode}", var_dir=source.var_dir / f"{index}{mode}"
        ).model_copy(
            update={"member_topic": source.member_topic, "board_topic": source.board_topic}
        )
        settings.var_dir.mkdir(parents=True, exist_ok=True)
        create_topics(admin, settings, platform_topics(settings)[2:])
        store = ProgressStore(settings.database)
        listener = ProgressListener(store)
        spark.streams.addListener(listener)
        drain = sequential if mode == "sequential" else pipelined
        timings = drain(spark, settings, JoinJobConfig(state_buckets=args.state_buckets))
        time.sleep(1)  # the listener writes the last progress event asynchronously
        spark.streams.removeListener(listener)
        join_progress = store.read(JOIN)
        peak_rows = max((p["state_rows"] for p in join_progress), default=0)
        peak_bytes = max((p["state_sst_bytes"] for p in join_progress), default=0)
        print(f"\n{mode}\n| stage | records | seconds | records/s |\n|---|---:|---:|---:|")
        for stage, seconds in timings.items():
            count = boards if stage.startswith("sink") else records
            print(f"| {stage} | {count:,} | {seconds:.1f} | {count / seconds:,.0f} |")
        state = f"{peak_rows:,} state rows, {peak_bytes / 1e6:,.1f} MB of RocksDB SST files"
        print(f"peak join state: {state}", flush=True)
        # The tick topic follows the board topic, which the modes share: it goes with the
        # backlog (deleting it here raced the next mode's creating it again).
        admin.delete_topics(
            [s.name for s in platform_topics(settings)[2:] if s.name != settings.join_tick_topic]
        )
    drop_backlog(source)


if __name__ == "__main__":
    main()
