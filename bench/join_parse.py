"""What the join's parsing costs: the same Kafka records read alone, then read and parsed.

    .venv/bin/boardstream stack up
    .venv/bin/python bench/join_parse.py                    # a production-scale backlog
    .venv/bin/python bench/join_parse.py --reuse compare-20261126022252 --repeat 5

Parsing (boardstream/joins/parse.py: the strict JSON parse, every contract field's type and
range, the dead letter of a bad record) runs in the join's first stage, before any record
reaches the state; a cold drain's first output waits for it. Each figure is the best of
``--repeat`` batch reads of the backlog's ``member`` and ``board`` topics in one local[2]
session, written to Spark's ``noop`` sink so every column is computed and nothing is stored.
"""

from __future__ import annotations

import argparse
import time

from backlog import backlog_settings, produce_backlog
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from boardstream.joins.job import JoinJobConfig
from boardstream.joins.parse import parse, routed
from boardstream.spark.session import spark_session


def best_of(frame: DataFrame, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        frame.write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - began)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--reuse", metavar="NAME-RUN", help="the backlog in topics NAME-RUN-* (e.g. compare's)"
    )
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of production scale")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.reuse:
        settings = backlog_settings(*args.reuse.split("-", 1))
    else:
        settings, _ = produce_backlog("parse", args.scale)
    spark = spark_session(settings, "join-parse-bench", master="local[2]", progress=False)
    raw = (
        spark.read.format("kafka")
        .options(**settings.to_spark_kafka_options())
        .option("subscribe", f"{settings.member_topic},{settings.board_topic}")
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
    )
    records = raw.count()
    bound = JoinJobConfig().max_record_bytes  # the join's default
    parsed = routed(parse(raw, settings.member_topic, settings.board_topic, bound))
    strict_only = raw.select(F.try_parse_json(F.col("value").cast("string")))
    rows = [
        ("read", best_of(raw, args.repeat)),
        ("read + the strict JSON parse alone", best_of(strict_only, args.repeat)),
        ("read + the join's parse (every check)", best_of(parsed, args.repeat)),
    ]
    read_s = rows[0][1]
    print(f"\n{records:,} records of {settings.member_topic}, {settings.board_topic}; local[2]\n")
    print("| | s | records/s | vs read |")
    print("|---|---:|---:|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} | {records / seconds:,.0f} | {seconds / read_s:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
