"""Incremental runs add up to a full run (#22): on a real pipeline (broker, Spark join and sink,
SQLite table), a seeded random sequence of rounds interleaves new members, updates and
deletions, new and updated boards (some for a member that never comes), the join, the sink
(not every round), tampering with the table (rows deleted, altered, added) and with the outputs
(records forged, records removed from the head of a partition) and an incremental run; then a
full run of the same state must give the identical verdict, counts, findings and balance.

The table (20-40 rows) is watched in slices of ``WATCH_ROWS`` rows, one per incremental run
(``Settings.reconcile_watch_rows``): before the full run, incremental runs make one round of
slices, by which every tampered row has been in some run's slice.

CI runs seed 1. More seeds, outside CI (each ~2 minutes), e.g. seeds 1 to 20:
``BOARDSTREAM_EQUIVALENCE_SEEDS=1-20 .venv/bin/pytest tests/integration/test_incremental_eq*``
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition

from boardstream.kafka.clients import admin_client
from boardstream.reconcile.evidence.run_ledger import FULL, INCREMENTAL
from boardstream.reconcile.run import RunResult
from tests.adversarial.world import detail_records, execute, forge, reconcile_as, rows, verdict
from tests.pipeline import Pipeline

ROUNDS = 4
MEMBERS = 6
WAITS_FOR = 99  # a member that never comes
WATCH_ROWS = 8


def seeds() -> list[int]:
    spec = os.environ.get("BOARDSTREAM_EQUIVALENCE_SEEDS", "1")
    first, _, last = spec.partition("-")
    return list(range(int(first), int(last or first) + 1))


def produce(pipeline: Pipeline, rng: random.Random, round_: int, now: int) -> None:
    """Members (new, updated, one deleted now and then), then boards: new ones, an update of
    an earlier one, one for the member that never comes."""
    for member_id in rng.sample(range(1, MEMBERS + 1), 3):
        pipeline.member(
            member_id, f"m{member_id}-r{round_}", ts=now, modified_at=f"2025-0{round_ + 1}"
        )
    if round_ and rng.random() < 0.5:
        pipeline.tombstone(rng.randint(1, MEMBERS), ts=now)
    for i in range(rng.randint(3, 6)):
        pipeline.board(f"r{round_}b{i}", rng.randint(1, MEMBERS), ts=now + i)
    if round_:
        pipeline.board(f"r{rng.randrange(round_)}b0", rng.randint(1, MEMBERS), ts=now + 10)
    if rng.random() < 0.5:
        pipeline.board(f"r{round_}w", WAITS_FOR, ts=now + 11)


def tamper(pipeline: Pipeline, rng: random.Random, round_: int) -> str:
    """One kind of tampering, or none; what was done."""
    settings = pipeline.settings
    url = settings.database
    loaded = sorted(r[0] for r in rows(url, "SELECT board_id FROM board_detail"))
    kind = rng.choice(["none", "delete", "alter", "add", "forge", "truncate"])
    if kind == "delete" and loaded:
        execute(url, "DELETE FROM board_detail WHERE board_id = :b", b=rng.choice(loaded))
    elif kind == "alter" and loaded:
        execute(
            url, "UPDATE board_detail SET city = 'forged' WHERE board_id = :b", b=rng.choice(loaded)
        )
    elif kind == "add":
        execute(
            url,
            "INSERT INTO board_detail (board_id, member_id, detail_partition, detail_offset)"
            " VALUES (:b, 1, 0, :o)",
            b=f"forged{round_}",
            o=rng.randint(0, 3),
        )
    elif kind == "forge" and loaded:
        record = detail_records(settings, rng.choice(loaded))[-1]
        record = {k: v for k, v in record.items() if k not in ("detail_partition", "detail_offset")}
        forge(settings, settings.board_detail_topic, None, {**record, "title": "forged"})
    elif kind == "truncate":
        admin = admin_client(settings)
        topic = rng.choice([settings.board_detail_topic, settings.board_topic])
        partition = rng.choice(list(admin.list_topics(topic, timeout=10).topics[topic].partitions))
        low, high = _watermarks(settings, topic, partition)
        if high > low:
            cut = [TopicPartition(topic, partition, rng.randint(low + 1, high))]
            for future in admin.delete_records(cut).values():
                future.result()
    return kind


def _watermarks(settings, topic: str, partition: int) -> tuple[int, int]:
    from confluent_kafka import Consumer

    consumer = Consumer({**settings.to_confluent(), "group.id": "watermarks"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    finally:
        consumer.close()


def new_records(pipeline: Pipeline, since: RunResult) -> int:
    """The records of the pipeline's topics past what the run ``since`` read."""
    settings = pipeline.settings
    return sum(
        _watermarks(settings, topic, int(partition))[1] - end
        for topic, ends in since.covered.items()
        for partition, (_start, end) in ends.items()
    )


@pytest.mark.parametrize("seed", seeds())
def test_incremental_runs_add_up_to_a_full_run(kafka, spark, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    pipeline = Pipeline(kafka, spark, tmp_path, var_dir=tmp_path, reconcile_watch_rows=WATCH_ROWS)
    now = int(time.time() * 1000)
    produce(pipeline, rng, 0, now)
    pipeline.join()
    pipeline.sink()
    assert reconcile_as(pipeline, FULL).kind == FULL
    done = []
    for round_ in range(1, ROUNDS + 1):
        produce(pipeline, rng, round_, now + 1_000 * round_)
        pipeline.join()
        if rng.random() < 0.75:
            pipeline.sink()
        done.append(tamper(pipeline, rng, round_))
        assert reconcile_as(pipeline, INCREMENTAL).kind == INCREMENTAL
    loaded = len(rows(pipeline.settings.database, "SELECT board_id FROM board_detail"))
    for _ in range(-(-loaded // WATCH_ROWS) + 1):  # a round of slices, wherever it starts
        incremental = reconcile_as(pipeline, INCREMENTAL)
    full = reconcile_as(pipeline, FULL)
    context = [f"seed {seed}, tampering {done}", "incremental:", *incremental.summary()]
    assert verdict(incremental) == verdict(full), "\n".join([*context, "full:", *full.summary()])
    assert full.reconciliation.counts["joined"] > 0  # the sequence gave something to check

    # More new records than an incremental run checks in process (#67): a full run, in Spark.
    produce(pipeline, rng, ROUNDS + 1, now + 1_000 * (ROUNDS + 1))
    pipeline.join()
    pipeline.sink()
    bounded = pipeline.settings.model_copy(update={"reconcile_in_process_max_records": 1})
    pipeline.settings, unbounded = bounded, pipeline.settings
    try:
        large = reconcile_as(pipeline, INCREMENTAL)
    finally:
        pipeline.settings = unbounded
    assert large.kind == FULL
    assert [n for n in large.notices if "new records since the last run" in n] == [
        f"{new_records(pipeline, full)} new records since the last run, more than an "
        "incremental run checks in process (1: BOARDSTREAM_RECONCILE_IN_PROCESS_MAX_RECORDS): "
        "this run is full"
    ]
    assert verdict(large) == verdict(reconcile_as(pipeline, INCREMENTAL))
