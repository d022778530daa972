"""The table-count job on a real broker and Spark: counts per value with retraction, both
orders under an out-of-order record, tombstones, dead letters, and a restart mid-stream."""

from __future__ import annotations

import base64
import json

import pytest

from boardstream.aggregations.holdings import ARRIVAL, EVENT_TIME
from boardstream.aggregations.source import SourceOptions
from boardstream.aggregations.table_count import TableCountConfig, start_table_count
from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import TopicSpec, create_topics
from tests.pipeline import Pipeline, consume_all

# (voter, candidate or None for a tombstone, record time): v3's last vote is older than its
# vote for B, so it wins in arrival order and loses in event-time order.
FIRST = [("v1", "A", 100), ("v2", "A", 110), ("v3", "B", 120)]
SECOND = [("v1", "B", 130), ("v2", None, 140), ("v3", "C", 50)]


@pytest.fixture
def pipeline(kafka, spark, tmp_path, t0: int) -> Pipeline:
    pipeline = Pipeline(kafka, spark, tmp_path)
    topic = f"{pipeline.settings.member_topic}-votes"
    spec = TopicSpec(topic, 3, 1, {"cleanup.policy": "compact"})
    create_topics(admin_client(pipeline.settings), pipeline.settings, [spec])
    pipeline.votes = topic
    pipeline.t0 = t0
    return pipeline


def send(pipeline: Pipeline, topic: str, records) -> None:
    for key, value, at in records:
        pipeline.send(topic, key.encode(), value and value.encode(), pipeline.t0 + at)


def run(pipeline: Pipeline, output: str, checkpoint: str, **options) -> None:
    config = TableCountConfig(
        source=SourceOptions(options.pop("topic", pipeline.votes), **options.pop("source", {})),
        output_topic=f"{pipeline.settings.board_topic}-{output}",
        checkpoint=pipeline.workdir / checkpoint,
        **options,
    )
    query = start_table_count(pipeline.spark, pipeline.settings, config)
    query.awaitTermination()
    assert query.exception() is None, query.exception()


def counts(pipeline: Pipeline, topic: str) -> dict[str, int]:
    """The newest count per value, as a reader of the compacted topic sees it."""
    latest = {}
    for key, value in consume_all(pipeline.settings, f"{pipeline.settings.board_topic}-{topic}"):
        latest[key.decode()] = json.loads(value)
    assert all(record["value"] == key for key, record in latest.items())
    return {key: record["count"] for key, record in latest.items()}


def test_retraction_in_both_orders_and_a_restart_give_exact_counts(pipeline) -> None:
    send(pipeline, pipeline.votes, FIRST)
    run(pipeline, "votes-restarted", "restarted", order=ARRIVAL)
    assert counts(pipeline, "votes-restarted") == {"A": 2, "B": 1}
    send(pipeline, pipeline.votes, SECOND)
    run(pipeline, "votes-restarted", "restarted", order=ARRIVAL)
    run(pipeline, "votes-arrival", "arrival", order=ARRIVAL)
    run(pipeline, "votes-event-time", "event-time", order=EVENT_TIME)

    # v1 A→B, v2 A→deleted, v3 B→C: the late record wins by arrival, loses by event time. A
    # batch emits only net changes (like Kafka Streams' record cache): in one batch A rose and
    # fell back to nothing, so it never appears; the restarted run retracted it to 0.
    assert counts(pipeline, "votes-arrival") == {"B": 1, "C": 1}
    assert counts(pipeline, "votes-event-time") == {"B": 2}
    assert counts(pipeline, "votes-restarted") == {"A": 0, "B": 1, "C": 1}


def test_boards_per_member_from_json_fields_with_dead_letters(pipeline) -> None:
    topic = pipeline.settings.board_topic
    boards = [
        ("b1", json.dumps({"member_id": 1, "at": "2026-01-01T00:00:00Z"}), 1),
        ("b2", json.dumps({"member_id": 1, "at": "2026-01-01T00:00:01Z"}), 2),
        ("b3", json.dumps({"member_id": 2, "at": "2026-01-01T00:00:02Z"}), 3),
        ("b2", None, 4),  # a deleted board decrements its member
        ("bad", "{not json", 5),
        ("nofield", json.dumps({"title": "x", "at": "2026-01-01T00:00:03Z"}), 6),
        ("badtime", json.dumps({"member_id": 3, "at": "yesterday"}), 7),
    ]
    send(pipeline, topic, boards)
    fields = {"value_field": "member_id", "time_field": "at"}
    run(pipeline, "boards-per-member", "bpm", topic=topic, source=fields, order=EVENT_TIME)
    assert counts(pipeline, "boards-per-member") == {"1": 1, "2": 1}
    letters = [
        json.loads(value)
        for _, value in consume_all(pipeline.settings, f"{topic}-boards-per-member-dlq")
    ]
    by_key = {base64.b64decode(letter["key_base64"]).decode(): letter for letter in letters}
    assert {key: letter["error"] for key, letter in by_key.items()} == {
        "bad": "not a JSON object",
        "nofield": "no field 'member_id'",
        "badtime": "field 'at' is not a time",
    }
    assert base64.b64decode(by_key["bad"]["value_base64"]) == b"{not json"
    assert consume_all(pipeline.settings, pipeline.settings.dlq_topic) == []  # not the join's
