"""An incremental reconciliation (#22) after new data, next to its floor and to a full run.

    .venv/bin/boardstream stack up
    .venv/bin/python bench/reconcile_incremental.py                 # production scale, 1 % new
    .venv/bin/python bench/reconcile_incremental.py --scale 0.1 --new 0.01
    .venv/bin/python bench/reconcile_incremental.py --scale 1 --keep  # prints the backlog's RUN
    .venv/bin/python bench/reconcile_incremental.py --reuse RUN       # new boards on it again
    .venv/bin/python bench/reconcile_incremental.py --reuse RUN --no-full  # cold: no full run

Produces the seeded backlog (or reuses a kept one), drains it through the join and the sink,
and runs a full reconciliation (timed: it also fills the digest ledger). Then produces ``--new``
times the backlog's boards as new boards of existing members, drains them, and times, in the
same session:

- the incremental run (snapshot, the new records, the ledger's lookups, the table's bucket
  digests, every check of the touched keys, the fact store, Great Expectations);
- its floor: one plain consume of just the new records of every topic the run reads, plus one
  aggregate query over the table, measured two ways: the cheapest (``count(*)``), and the one
  the run computes (the bucket digests of the slice it looked at, as the run computes them),
  alone.
"""

from __future__ import annotations

import argparse
import json
import random
import time

import sqlalchemy as sa
from backlog import backlog_settings, drain, drop_backlog, produce_backlog
from confluent_kafka import Producer

from boardstream import database, logs, reconcile
from boardstream.generator.manifest import Manifest
from boardstream.kafka.clients import admin_client
from boardstream.kafka.replay import read_ranges
from boardstream.kafka.topics import describe_topics, platform_topics
from boardstream.reconcile.evidence.run_ledger import FULL, INCREMENTAL
from boardstream.reconcile.incremental import table_buckets
from boardstream.reconcile.incremental.digest_ledger import DigestLedger
from boardstream.reconcile.incremental.table_buckets import IdRange
from boardstream.settings import Settings
from boardstream.sink import table as sink_table
from boardstream.spark.session import spark_session

LEDGER = DigestLedger.of("board_detail", "bigint")  # the shipped pipeline's

NAME = "bench-inc"


def produce_new_boards(settings: Settings, count: int, members: int) -> None:
    """``count`` boards of ids no backlog uses, each of a random existing member."""
    producer = Producer({**settings.to_confluent(), "acks": "all", "linger.ms": 20})
    pick = random.Random(2)
    now = int(time.time() * 1000)
    for i in range(count):
        board_id = f"new-{now}-{i}"
        value = {
            "id": board_id,
            "member_id": pick.randint(1, members),
            "title": f"title {i}",
            "body": "body",
            "created_ts": now + i,
            "created_at": "2026-11-25T00:00:00",
            "modified_at": "2026-11-25T00:00:00",
        }
        producer.produce(
            settings.board_topic, key=board_id.encode(), value=json.dumps(value).encode()
        )
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0, "new boards not acknowledged"


def consume_since(settings: Settings, topics: list[str], cursor: dict) -> int:
    """One plain consume of the records past ``cursor`` in ``topics`` (one consumer assigned
    every partition with something new, as ``kafka.replay`` reads); how many."""
    ranges = {
        d.name: {p: (cursor.get(d.name, {}).get(p, 0), end) for p, end in d.end_offsets.items()}
        for d in describe_topics(admin_client(settings), settings, topics)
    }
    records = 0

    def count(_message: object) -> None:
        nonlocal records
        records += 1

    read_ranges(settings, ranges, count, group="bench-floor")
    return records


def timed(action):
    began = time.perf_counter()
    result = action()
    return result, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of production scale")
    parser.add_argument("--new", type=float, default=0.01, help="new boards, as a fraction")
    parser.add_argument("--keep", action="store_true", help="leave the backlog in place")
    parser.add_argument("--reuse", metavar="RUN", help="add new boards to a kept backlog")
    parser.add_argument(
        "--no-full",
        action="store_true",
        help="with --reuse: no full run first (its ledger is used as it is), so the incremental "
        "run is the session's first, as in a DAG run's spark-submit",
    )
    args = parser.parse_args()
    if args.no_full and not args.reuse:
        parser.error("--no-full needs --reuse: a new backlog has no ledger yet")
    logs.configure(verbose=False)  # the runs' phase timings, as the CLI shows them
    if args.reuse:
        settings = backlog_settings(NAME, args.reuse)
        manifest = Manifest.read(settings.var_dir / "manifest.json")
    else:
        settings, manifest = produce_backlog(NAME, args.scale)
    # The cold run as the DAG runs it (a JVM with C1 only); after a full run, the JVM it needs.
    spark = spark_session(settings, "bench-reconcile-incremental", short_lived=args.no_full)
    spark.sparkContext.setLogLevel("ERROR")
    if not args.reuse:
        drain(spark, settings)
    run_once = reconcile.run_once  # imported (with GX) before any clock starts
    engine = database.engine(settings.database)
    full_s = None
    if not args.no_full:
        full, full_s = timed(lambda: run_once(spark, settings, "bench", kind=FULL))
        print("\n".join(full.summary()), flush=True)
    with engine.connect() as connection:
        cursor = LEDGER.cursor(connection)
    boards = sum(cursor[settings.board_topic].values())  # source records the ledger holds
    # The backlog's own members (1..n), not the --scale given now: new boards of members a
    # reused backlog never had wait in the join as they should (what 399 of 451 did once).
    members = manifest.options["members"]
    new_boards = max(1, round(boards * args.new))
    produce_new_boards(settings, new_boards, members)
    drain(spark, settings)
    print(f"{new_boards:,} new boards joined and loaded; reconciling incrementally", flush=True)

    result, incremental_s = timed(lambda: run_once(spark, settings, "bench", kind=INCREMENTAL))
    print("\n".join(result.summary()), flush=True)
    assert result.kind == INCREMENTAL and result.passed, "the incremental run did not pass"
    topics = [spec.name for spec in platform_topics(settings)]
    new_records, consume_s = timed(lambda: consume_since(settings, topics, cursor))
    with engine.connect() as connection:
        table_rows, count_s = timed(
            lambda: connection.execute(sa.text("SELECT count(*) FROM board_detail")).scalar()
        )
    # The slice the run looked at (the next run's starts after it): on a table of more than one
    # slice, consecutive runs look at a full slice and at the rows after it, in turn.
    looked = result.table_slice or {}
    within = IdRange(looked.get("after"), looked.get("through"))
    digests, buckets_s = timed(
        lambda: table_buckets.bucket_digests(engine, sink_table.BOARD_DETAIL, within=within)
    )
    floor_s = consume_s + count_s
    watch_floor_s = consume_s + buckets_s

    print(f"\n{boards:,} source boards before; {new_boards:,} new ({args.new:.1%})")
    print(f"{new_records:,} new records in the topics; {table_rows:,} table rows")
    print("| step | seconds |\n|---|---:|")
    if full_s is not None:
        print(f"| full run (all checks, table, GX, fills the ledger) | {full_s:.1f} |")
    print(f"| incremental run | {incremental_s:.1f} |")
    print(f"| floor: consume the new records | {consume_s:.2f} |")
    print(f"| floor: one aggregate query over the table (count) | {count_s:.2f} |")
    looked_at = sum(digest.rows for digest in digests.values())
    print(f"| floor: the bucket digests of the {looked_at:,} rows looked at | {buckets_s:.2f} |")
    print(
        f"\nincremental: {incremental_s:.1f} s, {incremental_s / floor_s:.1f}x its floor with "
        f"count(*) ({floor_s:.2f} s), {incremental_s / watch_floor_s:.1f}x with the bucket "
        f"digests ({watch_floor_s:.2f} s)"
    )
    if args.keep or args.reuse:
        print(f"backlog kept: --reuse {settings.var_dir.name}")
        return
    drop_backlog(settings)


if __name__ == "__main__":
    main()
