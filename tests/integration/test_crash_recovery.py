"""kill -9 the join and the sink mid-backlog, several times, then let them finish from their
checkpoints: board_detail ends with exactly one row per board, and board-detail has them all."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from boardstream.generator.plan import GeneratorOptions, Plan
from boardstream.settings import Settings
from boardstream.spark.progress import read_progress
from tests.integration.pipeline import Pipeline, consume_all, query

SEED = 20261122  # the kill points derive from it: a failure replays with the same schedule
KILLS = 3


def job_env(settings: Settings) -> dict[str, str]:
    fields = (
        "var_dir",
        "jar_cache",
        "bootstrap_servers",
        "database_url",
        "member_topic",
        "board_topic",
        "board_detail_topic",
        "unmatched_topic",
        "dlq_topic",
    )
    values = {f"BOARDSTREAM_{name.upper()}": str(getattr(settings, name)) for name in fields}
    return {**os.environ, **values, "BOARDSTREAM_SPARK_MASTER": "local[2]"}


def start(settings: Settings, job: str, *args: str) -> subprocess.Popen:
    log = (settings.var_dir / f"{job}.log").open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "boardstream.cli", "job", "run", job, "--", *args],
        env=job_env(settings),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # the whole tree (spark-submit, JVM, Python workers) is one group
    )


def batches(settings: Settings, job: str) -> int:
    path = settings.var_dir / "progress" / f"{job}.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


def kill_mid_run(settings: Settings, job: str, rng: random.Random, args: list[str]) -> None:
    """Start ``job`` continuous, wait for a batch to complete, then SIGKILL it a little later."""
    before = batches(settings, job)
    process = start(settings, job, "--trigger", "continuous", "--interval", "0 seconds", *args)
    deadline = time.monotonic() + 300
    while batches(settings, job) <= before:
        assert process.poll() is None, (settings.var_dir / f"{job}.log").read_text()[-3000:]
        assert time.monotonic() < deadline, f"{job} made no progress"
        time.sleep(0.2)
    time.sleep(rng.uniform(0.0, 2.0))
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def run_to_end(settings: Settings, job: str, args: list[str]) -> None:
    process = start(settings, job, "--trigger", "available-now", *args)
    assert process.wait(timeout=600) == 0, (settings.var_dir / f"{job}.log").read_text()[-3000:]


def test_kill_9_and_restart_loses_and_duplicates_nothing(kafka, postgres, tmp_path: Path) -> None:
    pipeline = Pipeline(kafka, None, tmp_path, var_dir=tmp_path, database_url=postgres.database_url)
    settings = pipeline.settings
    options = GeneratorOptions(
        members=3_000, boards=6_000, seed=SEED, update_ratio=0.2, late_members=30
    )
    boards = set()
    for ts, record in enumerate(Plan(options), start=int(time.time() * 1000)):
        topic = settings.member_topic if record.topic == "member" else settings.board_topic
        pipeline.producer.produce(topic, value=record.value, key=record.key, timestamp=ts)
        if record.topic == "board":
            boards.add(record.key.decode())
    assert pipeline.producer.flush(30) == 0

    join_args = ["--max-offsets-per-trigger", "1500", "--state-buckets", "16"]
    sink_args = ["--max-offsets-per-trigger", "1000"]
    rng = random.Random(SEED)
    for _ in range(KILLS):
        kill_mid_run(settings, "board-detail-join", rng, join_args)
        kill_mid_run(settings, "board-detail-sink", rng, sink_args)
    run_to_end(settings, "board-detail-join", join_args)
    run_to_end(settings, "board-detail-sink", sink_args)

    detail_keys = [key.decode() for key, _ in consume_all(settings, settings.board_detail_topic)]
    assert set(detail_keys) == boards, "every board reaches board-detail"
    replayed = len(detail_keys) - len(set(detail_keys))  # at-least-once sink: replays allowed

    rows = query(settings.database, "select board_id, count(*) from board_detail group by board_id")
    loaded = {board_id: count for board_id, count in rows if board_id in boards}
    assert set(loaded) == boards, f"missing from board_detail: {len(boards - set(loaded))}"
    assert set(loaded.values()) == {1}
    assert consume_all(settings, settings.unmatched_topic) == []
    assert consume_all(settings, settings.dlq_topic) == []

    # Every micro-batch left a progress line: rows, rates, duration, state, lag.
    join_progress = read_progress(settings.progress, "board-detail-join")
    assert sum(p["input_rows"] for p in join_progress) >= len(boards)
    assert max(p["state_rows"] for p in join_progress) == 16  # one state row per bucket
    assert all(p["batch_duration_ms"] > 0 for p in join_progress)
    assert join_progress[-1]["max_offsets_behind_latest"] == 0
    sink_progress = read_progress(settings.progress, "board-detail-sink")
    assert sum(p["input_rows"] for p in sink_progress) >= len(boards)
    print(f"{len(boards):,} boards; {replayed:,} replayed into board-detail by the restarts")
