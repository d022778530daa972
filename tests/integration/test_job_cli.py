"""`boardstream job list` and `boardstream job run window-count -- ...` as docs/COMMANDS.md
writes them: the console script, spark-submit and the generic window job in available-now mode,
once with `--emit final` and once with `--emit updates`, on the same events."""

from __future__ import annotations

import json
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Producer

from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import TopicSpec, create_topics
from boardstream.settings import Settings
from boardstream.spark.submit import JOBS
from tests.fixtures import cli
from tests.pipeline import consume_all

pytestmark = pytest.mark.integration

S = 1000
MINUTE = 60 * S
T0 = (int(time.time()) // 3600 - 2) * 3600 * S  # an hour boundary 2 h ago
# (kind, seconds after T0) in arrival order, the event time in the JSON field "at".
EVENTS = [("a", 0), ("a", 20), ("b", 50), ("a", 75), ("c", 200), ("a", 10)]


def test_job_list_prints_the_jobs(kafka: Settings) -> None:
    result = cli(kafka, "job", "list")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == sorted(JOBS)
    assert {"board-detail-join", "board-detail-sink", "window-count"} <= set(JOBS)


@pytest.fixture(scope="module")
def events(kafka: Settings) -> str:
    """One partition (stream time is then the events' own), the events above."""
    topic = f"win{uuid.uuid4().hex[:6]}-events"
    create_topics(
        admin_client(kafka), kafka, [TopicSpec(topic, 1, 1, {"cleanup.policy": "delete"})]
    )
    producer = Producer({**kafka.to_confluent(), "acks": "all"})
    for kind, second in EVENTS:
        value = json.dumps({"kind": kind, "at": T0 + second * S})
        producer.produce(topic, key=kind.encode(), value=value.encode())
    assert producer.flush(10) == 0
    return topic


def window_count(kafka: Settings, source: str, emit: str) -> str:
    output = f"{source}-{emit}"
    args = ["--source-topic", source, "--output-topic", output, "--size", "1m", "--grace", "30s"]
    args += ["--retention", "1h", "--value-field", "kind", "--time-field", "at", "--emit", emit]
    result: subprocess.CompletedProcess[str] = cli(
        kafka, "job", "run", "window-count", "--", *args, timeout=600
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Traceback" not in result.stdout + result.stderr
    return output


def windows(kafka: Settings, topic: str) -> list[tuple[str, int, int, bool]]:
    """(group, window start in minutes after T0, count, final) of every output record."""
    return [
        (r["group"], (r["window_start"] - T0) // MINUTE, r["count"], r["final"])
        for r in (json.loads(value) for _, value in consume_all(kafka, topic))
        if r["window_end"] - r["window_start"] == MINUTE
    ]


def too_late(kafka: Settings, output: str) -> list[tuple[str, int]]:
    """(group, seconds after T0) of each event the job's own DLQ holds as too late."""
    letters = [json.loads(value) for _, value in consume_all(kafka, f"{output}-dlq")]
    assert all(letter["error"].startswith("too late: ") for letter in letters), letters
    return [(letter["group"], (letter["event_ms"] - T0) // S) for letter in letters]


def test_window_count_emit_final_and_updates(kafka: Settings, events: str) -> None:
    final = window_count(kafka, events, "final")
    updates = window_count(kafka, events, "updates")
    # Stream time reaches 200 s: the windows of minutes 0 and 1 are closed (end + 30 s grace),
    # so a's event at 10 s, read after that, is too late; c's window (minute 3) is still open.
    closed = [("a", 0, 2, True), ("a", 1, 1, True), ("b", 0, 1, True)]
    assert sorted(windows(kafka, final)) == closed
    # Updates: every window the batch changed, with its count so far; c's open one too.
    assert sorted(windows(kafka, updates)) == [*closed, ("c", 3, 1, False)]
    assert too_late(kafka, final) == too_late(kafka, updates) == [("a", 10)]
