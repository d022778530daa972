"""Restore cost of a member table topic before and after compaction tuning, side by side.

    .venv/bin/boardstream stack up
    .venv/bin/python bench/compaction_restore.py                 # 442,128 members x 10 versions
    .venv/bin/python bench/compaction_restore.py --scale 0.1

Produces an update-heavy member table topic (every member 10 versions, 1% deleted) with Kafka's
default cleaner settings, rebuilds the member table from it (a consumer replaying the whole
topic into a dict, as a state restore does), applies the recommended settings, appends a few
updates (a live topic keeps getting them; the first append rolls the oversized active
segment), waits for the cleaner, and rebuilds again. Prints records replayed, seconds and
records/s of each restore and the ratios.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time

from confluent_kafka import Message

from boardstream import compaction
from boardstream.compaction.measure import measure_topic
from boardstream.compaction.policy import Targets
from boardstream.compaction.tuning import Selection
from boardstream.generator.plan import PRODUCTION_MEMBERS, GeneratorOptions
from boardstream.generator.producer import produce
from boardstream.kafka.clients import admin_client, reliable_producer
from boardstream.kafka.replay import replay
from boardstream.kafka.topics import create_topics, describe_topics, platform_topics
from boardstream.settings import Settings

VERSIONS = 10


def restore(settings: Settings, topic: str) -> tuple[int, int, float]:
    """Rebuild {member_id: profile} from ``topic``; returns records read, members, seconds."""
    admin = admin_client(settings)
    (description,) = describe_topics(admin, settings, [topic])
    began = time.perf_counter()
    table: dict[bytes | None, dict] = {}
    records = 0

    def load(message: Message) -> None:
        nonlocal records
        records += 1
        if message.value() is None:
            table.pop(message.key(), None)
        else:
            table[message.key()] = json.loads(message.value())

    replay(settings, topic, description.end_offsets, load)
    return records, len(table), time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of production scale")
    parser.add_argument("--wait", type=float, default=300, help="seconds to wait for the cleaner")
    args = parser.parse_args()
    run = time.strftime("%Y%m%d%H%M%S")
    base = Settings()
    settings = base.with_topic_prefix(
        f"bench-compaction-{run}", var_dir=base.var_dir / "bench" / run
    )
    admin = admin_client(settings)
    create_topics(admin, settings, platform_topics(settings)[:2])  # produce needs both
    members = round(PRODUCTION_MEMBERS * args.scale)
    options = GeneratorOptions(
        members=members, boards=0, update_ratio=VERSIONS - 1, deletes=members // 100, seed=1
    )
    produce(settings, options, settings.var_dir / "manifest.json", 5.0)
    topic = settings.member_topic

    before = restore(settings, topic)
    print(f"restore before tuning: {before[0]:,} records, {before[1]:,} members, {before[2]:.1f}s")
    # The tuning log in a database of the bench's own; reconciliation reads no topic here.
    logged = settings.model_copy(
        update={"database_url": f"sqlite:///{settings.var_dir / 'bench.db'}"}
    )
    (tuned,) = compaction.tune(admin, logged, Selection(include=(topic,)), Targets(), True, "bench")
    for planned in tuned.planned:
        print(f"  {planned.line()}")
    producer = reliable_producer(settings)
    for member_id in range(1, 101):
        producer.produce(topic, key=str(member_id).encode(), value=b'{"member_id": 0}')
    producer.flush(30)
    deadline = time.monotonic() + args.wait
    floor = before[1] + members // 100 + 100  # live members, tombstones, the new updates
    while measure_topic(admin, settings, topic, False).records > floor:
        if time.monotonic() > deadline:
            print(f"the cleaner did not reach the floor within {args.wait:g}s; measuring anyway")
            break
        time.sleep(5)
    compaction.verify(admin, logged, tuned.change_id, show_progress=False)
    after = restore(settings, topic)
    print(f"restore after tuning: {after[0]:,} records, {after[1]:,} members, {after[2]:.1f}s\n")
    print("| restore of the member table | records replayed | seconds | records/s |")
    print("|---|---:|---:|---:|")
    for label, (records, _, seconds) in (("default settings", before), ("tuned", after)):
        print(f"| {label} | {records:,} | {seconds:.1f} | {records / seconds:,.0f} |")
    print(
        f"\nreplayed {before[0] / after[0]:.1f}x fewer records, {before[2] / after[2]:.1f}x faster;"
        f" {after[0] / after[1]:.3f} records per live member after tuning"
    )
    admin.delete_topics([topic, settings.board_topic])
    shutil.rmtree(settings.var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
