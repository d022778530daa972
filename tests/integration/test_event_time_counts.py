"""Window and session counts on a real broker and Spark, one partition so arrival order is
offset order: on-time, within-grace and too-late events, retention seen in the state store,
and a run restarted between every step ending exactly as one uninterrupted run."""

from __future__ import annotations

import json
import time

import pytest

from boardstream.aggregations.event_time import SessionSpec, WindowSpec
from boardstream.aggregations.event_time_job import EventTimeConfig, start_event_time_count
from boardstream.aggregations.source import SourceOptions
from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import TopicSpec, create_topics
from boardstream.spark.state import state_report
from tests.pipeline import Pipeline, consume_all

S = 1000
T0 = (int(time.time()) // 600 - 1) * 600 * S  # a 10-minute boundary, minutes ago


@pytest.fixture
def pipeline(kafka, spark, tmp_path) -> Pipeline:
    pipeline = Pipeline(kafka, spark, tmp_path)
    pipeline.events = f"{pipeline.settings.board_topic}-events"
    spec = TopicSpec(pipeline.events, 1, 1, {"cleanup.policy": "delete"})
    create_topics(admin_client(pipeline.settings), pipeline.settings, [spec])
    return pipeline


def send(pipeline: Pipeline, events: list[tuple[str, int]]) -> None:
    for group, second in events:
        pipeline.send(pipeline.events, group.encode(), group.encode(), T0 + second * S)


def run(pipeline: Pipeline, output: str, spec, **options) -> None:
    config = EventTimeConfig(
        job="window-count" if isinstance(spec, WindowSpec) else "session-count",
        source=SourceOptions(pipeline.events),
        output_topic=f"{pipeline.events}-{output}",
        spec=spec,
        checkpoint=pipeline.workdir / output,
        **options,
    )
    query = start_event_time_count(pipeline.spark, pipeline.settings, config)
    query.awaitTermination()
    assert query.exception() is None, query.exception()


def results(pipeline: Pipeline, output: str) -> list[dict]:
    """In (group, start) order: the output topic has several partitions."""
    topic = f"{pipeline.events}-{output}"
    found = [json.loads(value) for _, value in consume_all(pipeline.settings, topic)]
    return sorted(found, key=lambda r: (r["group"], r.get("window_start", r.get("session_start"))))


def late(pipeline: Pipeline, output: str) -> list[tuple[str, int]]:
    dlq = f"{pipeline.events}-{output}-dlq"  # the job's own DLQ by default
    letters = [json.loads(v) for _, v in consume_all(pipeline.settings, dlq)]
    assert all(letter["error"].startswith("too late: ") for letter in letters)
    return [(letter["group"], (letter["event_ms"] - T0) // S) for letter in letters]


WINDOW_STEPS = [
    [("a", 1), ("a", 12), ("a", 8), ("a", 14)],
    [("a", 16), ("a", 9)],
    [("b", 26)],
    [("b", 41)],
]


def test_windows_grace_lateness_retention_and_restart(pipeline) -> None:
    spec = WindowSpec(size_ms=10 * S, grace_ms=5 * S, retention_ms=30 * S)
    for step in WINDOW_STEPS:
        send(pipeline, step)
        run(pipeline, "windows-stepped", spec)
    run(pipeline, "windows-once", spec)

    expected = [
        {"group": "a", "window_start": T0, "window_end": T0 + 10 * S, "count": 2, "final": True},
        {
            "group": "a",
            "window_start": T0 + 10 * S,
            "window_end": T0 + 20 * S,
            "count": 3,
            "final": True,
        },
        {
            "group": "b",
            "window_start": T0 + 20 * S,
            "window_end": T0 + 30 * S,
            "count": 1,
            "final": True,
        },
    ]
    assert results(pipeline, "windows-stepped") == expected
    assert results(pipeline, "windows-once") == expected
    # Each job dead-letters into its own <output>-dlq.
    assert late(pipeline, "windows-stepped") == late(pipeline, "windows-once") == [("a", 9)]

    # a's windows are past their 30 s retention at stream time 41 s: gone from the state store.
    lines = list(state_report(pipeline.spark, (pipeline.workdir / "windows-stepped").as_uri()))
    stored = json.loads(next(line for line in lines if line.startswith("    key ")).split(" → ")[1])
    assert (stored["group"], stored["start_ms"]) == (["b", "b"], [T0 + 20 * S, T0 + 40 * S])
    assert any(line.startswith("  state clock: 1 rows") for line in lines)


def test_sessions_merge_close_and_refuse_a_late_event(pipeline) -> None:
    spec = SessionSpec(gap_ms=10 * S, grace_ms=20 * S, retention_ms=100 * S)
    for step in [
        [("m", 0), ("m", 25), ("m", 5)],
        [("m", 15)],
        [("m", 54)],
        [("m", 55)],
        [("m", 30)],
    ]:
        send(pipeline, step)
        run(pipeline, "sessions", spec, group_by="key")
    assert results(pipeline, "sessions") == [
        {"group": "m", "session_start": T0, "session_end": T0 + 25 * S, "count": 4, "final": True}
    ]
    assert late(pipeline, "sessions") == [("m", 30)]
    keys = [key for key, _ in consume_all(pipeline.settings, f"{pipeline.events}-sessions")]
    assert keys == [f"m@{T0}".encode()]
    [(key, value)] = consume_all(pipeline.settings, f"{pipeline.events}-sessions-dlq")
    assert consume_all(pipeline.settings, pipeline.settings.dlq_topic) == []  # not the join's
    assert key == b"m" and (json.loads(value)["partition"], json.loads(value)["offset"]) == (0, 6)
