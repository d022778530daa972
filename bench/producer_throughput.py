"""Producer throughput of `boardstream produce` at production scale, variants side by side.

Runs against the broker in BOARDSTREAM_BOOTSTRAP_SERVERS (start one with `boardstream stack up`):

    .venv/bin/python bench/producer_throughput.py            # 442,128 members + 447,017 boards
    .venv/bin/python bench/producer_throughput.py --scale 0.1

Each variant produces the same seeded records into fresh topics (deleted afterwards):
- plan only: generating and JSON-encoding the records, no Kafka (the ceiling for the producer);
- lz4: the generator's settings (acks=all, idempotence, lz4);
- none: the same without compression.
It prints a Markdown table with records/s, MB/s and each variant's ratio to the default.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from confluent_kafka.admin import AdminClient

from boardstream.generator.plan import PRODUCTION_BOARDS, PRODUCTION_MEMBERS, GeneratorOptions, Plan
from boardstream.generator.producer import produce
from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import create_topics, platform_topics
from boardstream.settings import Settings


def plan_only(options: GeneratorOptions) -> tuple[float, int, int]:
    started = time.perf_counter()
    records = size = 0
    for record in Plan(options):
        records += 1
        size += len(record.key) + len(record.value or b"")
    return time.perf_counter() - started, records, size


def with_kafka(
    settings: Settings, admin: AdminClient, options: GeneratorOptions, name: str, overrides: dict
) -> float:
    topics = settings.model_copy(
        update={"member_topic": f"bench-{name}-member", "board_topic": f"bench-{name}-board"}
    )
    specs = [
        s for s in platform_topics(topics) if s.name in (topics.member_topic, topics.board_topic)
    ]
    create_topics(admin, topics, specs)
    try:
        started = time.perf_counter()
        produce(topics, options, settings.var_dir / "bench" / f"{name}.json", 5.0, overrides)
        return time.perf_counter() - started
    finally:
        for future in admin.delete_topics([s.name for s in specs]).values():
            future.result()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of production scale")
    args = parser.parse_args()
    options = GeneratorOptions(
        members=round(PRODUCTION_MEMBERS * args.scale),
        boards=round(PRODUCTION_BOARDS * args.scale),
        seed=1,
        update_ratio=0.1,
    )
    settings = Settings()
    admin = admin_client(settings)
    plan_s, records, size = plan_only(options)
    rows = [("plan only (no Kafka)", plan_s)]
    rows.append(("produce, lz4 (default)", with_kafka(settings, admin, options, "lz4", {})))
    rows.append(
        (
            "produce, no compression",
            with_kafka(settings, admin, options, "none", {"compression.type": "none"}),
        )
    )
    default_s = rows[1][1]
    machine = f"{platform.machine()}, {os.cpu_count()} cores"
    print(f"\n{records:,} records, {size / 1e6:,.1f} MB of keys+values; {machine}")
    print("| variant | seconds | records/s | MB/s | speed vs default |")
    print("|---|---:|---:|---:|---:|")
    for name, seconds in rows:
        print(
            f"| {name} | {seconds:.1f} | {records / seconds:,.0f} | {size / 1e6 / seconds:,.1f} "
            f"| {default_s / seconds:.2f}x |"
        )


if __name__ == "__main__":
    main()
