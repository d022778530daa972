"""Reconciliation at production scale, next to the floor: one plain consume of the same topics.

    .venv/bin/boardstream stack up
    .venv/bin/python bench/reconcile_backlog.py            # 442,128 members + 447,017 boards
    .venv/bin/python bench/reconcile_backlog.py --scale 0.1
    .venv/bin/python bench/reconcile_backlog.py --scale 0.3 --keep   # prints the backlog's RUN
    .venv/bin/python bench/reconcile_backlog.py --reuse RUN          # reconcile it again

Produces the seeded backlog, drains it through the join and the sink (available-now, one local
Spark session), then times one reconciliation run (snapshot, every exact check, the table read,
the Great Expectations suite and Data Docs) and one plain consume of the five topics it reads
(a confluent-kafka consumer counting records), and prints both and their ratio. ``--keep``
leaves the drained backlog (topics, var dir) in place and ``--reuse`` reconciles it again, for
iterating on the reconciliation alone (in a cold Spark session, so slower); reported figures come
from a normal run.
"""

from __future__ import annotations

import argparse
import time

from backlog import backlog_settings, drain, drop_backlog, produce_backlog

from boardstream import logs, reconcile
from boardstream.kafka.clients import admin_client
from boardstream.kafka.replay import replay
from boardstream.kafka.topics import describe_topics, platform_topics
from boardstream.settings import Settings
from boardstream.spark.session import spark_session

NAME = "bench-rec"


def plain_consume(settings: Settings, topics: list[str]) -> int:
    admin = admin_client(settings)
    records = 0

    def count(_message: object) -> None:
        nonlocal records
        records += 1

    for description in describe_topics(admin, settings, topics):
        replay(settings, description.name, description.end_offsets, count)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of production scale")
    parser.add_argument("--keep", action="store_true", help="leave the drained backlog in place")
    parser.add_argument("--reuse", metavar="RUN", help="reconcile a kept backlog again")
    args = parser.parse_args()
    logs.configure(verbose=False)  # the reconciliation's phase timings, as the CLI shows them
    if args.reuse:
        settings = backlog_settings(NAME, args.reuse)
    else:
        settings, _ = produce_backlog(NAME, args.scale)
    spark = spark_session(settings, "bench-reconcile")
    spark.sparkContext.setLogLevel("ERROR")
    if not args.reuse:
        drain(spark, settings)
        print("pipeline drained; reconciling", flush=True)

    # The front door imports its module (and Great Expectations, ~4 s) on first use: resolved
    # here, so the figure is the run's, as when the module was imported at the top (before #19).
    run_once = reconcile.run_once
    began = time.perf_counter()
    result = run_once(spark, settings, "bench")
    reconcile_s = time.perf_counter() - began
    print("\n".join(result.summary()), flush=True)
    topics = [spec.name for spec in platform_topics(settings)]
    began = time.perf_counter()
    records = plain_consume(settings, topics)
    floor_s = time.perf_counter() - began

    boards = result.reconciliation.counts["source"]
    print(f"\n{boards:,} source boards; the five topics hold {records:,} records")
    print("| step | seconds |\n|---|---:|")
    print(f"| reconciliation run (all checks, table, GX) | {reconcile_s:.1f} |")
    print(f"| plain consume of the same topics (floor) | {floor_s:.1f} |")
    print(f"\nratio: {reconcile_s / floor_s:.1f}x the floor")
    if args.keep or args.reuse:
        print(f"backlog kept: --reuse {settings.var_dir.name}")
        return
    drop_backlog(settings)


if __name__ == "__main__":
    main()
