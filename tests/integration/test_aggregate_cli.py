"""The `boardstream aggregate NAME` commands of docs/COMMANDS.md as a user types them: each
preset runs under spark-submit in available-now mode (the jobs' default trigger) on one small
data set, and its output topic holds exactly the counts docs/COMMANDS.md says it computes."""

from __future__ import annotations

import base64
import json
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import TopicSpec, create_topics
from boardstream.settings import Settings
from tests.fixtures import cli
from tests.pipeline import consume_all

pytestmark = pytest.mark.integration

S = 1000
# An hour boundary 4 h ago: every record is in the past and inside the topics' retention.
T0 = (int(time.time()) // 3600 - 4) * 3600 * S
# (board id, member id or None for a deleted board, seconds after T0) on the board topic.
BOARDS = [
    ("b1", 1, 0),
    ("b2", 1, 60),
    ("b3", 2, 120),
    ("b2", None, 180),
    ("b5", 1, 240),
    ("b4", 3, 3 * 3600),  # three hours later: the first sessions are over
]
# (board id, city, seconds after T0) on board-detail, the join's output.
JOINED = [
    ("b1", "Seoul", 0),
    ("b2", "Seoul", 30),
    ("b3", "Busan", 45),
    ("b4", "Seoul", 70),
    ("b5", "Busan", 300),  # moves stream time past the first two minutes' windows + grace
]


@pytest.fixture(scope="module")
def boards(kafka: Settings) -> Iterator[Settings]:
    """The board and board-detail topics (one partition each, so stream time is their record
    time) under a prefix of this module's own, with the records above."""
    settings = kafka.with_topic_prefix(f"agg{uuid.uuid4().hex[:6]}")
    specs = [
        TopicSpec(settings.board_topic, 1, 1, {"cleanup.policy": "delete"}),
        TopicSpec(settings.board_detail_topic, 1, 1, {"cleanup.policy": "delete"}),
    ]
    create_topics(admin_client(settings), settings, specs)
    producer = Producer({**settings.to_confluent(), "acks": "all"})
    for board_id, member_id, second in BOARDS:
        value = None if member_id is None else json.dumps({"id": board_id, "member_id": member_id})
        producer.produce(
            settings.board_topic, key=board_id.encode(), value=value, timestamp=T0 + second * S
        )
    for board_id, city, second in JOINED:
        value = json.dumps({"board_id": board_id, "member_id": 1, "city": city})
        producer.produce(
            settings.board_detail_topic,
            key=board_id.encode(),
            value=value.encode(),
            timestamp=T0 + second * S,
        )
    assert producer.flush(10) == 0
    yield settings


def aggregate(settings: Settings, name: str) -> subprocess.CompletedProcess[str]:
    env = {
        "BOARDSTREAM_BOARD_TOPIC": settings.board_topic,
        "BOARDSTREAM_BOARD_DETAIL_TOPIC": settings.board_detail_topic,
    }
    result = cli(settings, "aggregate", name, timeout=600, extra_env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Traceback" not in result.stdout + result.stderr
    return result


def records(settings: Settings, topic: str) -> list[tuple[str, dict]]:
    return [
        (key.decode(), json.loads(value)) for key, value in consume_all(settings, topic) if value
    ]


def dead_letters(settings: Settings, output: str) -> list[tuple[str, str]]:
    """(key, error) of each record in the job's own DLQ, ``<output topic>-dlq``."""
    return [
        (base64.b64decode(letter["key_base64"]).decode(), letter["error"])
        for _, letter in records(settings, f"{output}-dlq")
    ]


def test_boards_per_member_counts_each_members_boards_now(boards: Settings) -> None:
    aggregate(boards, "boards-per-member")
    output = f"{boards.board_topic}-boards-per-member"
    latest = dict(records(boards, output))
    # m1: b1, b5 (b2 deleted); m2: b3; m3: b4.
    assert {key: record["count"] for key, record in latest.items()} == {"1": 2, "2": 1, "3": 1}
    assert all(record["value"] == key for key, record in latest.items())
    assert dead_letters(boards, output) == []


def test_member_sessions_counts_boards_per_30_minute_session(boards: Settings) -> None:
    aggregate(boards, "member-sessions")
    output = f"{boards.board_topic}-member-sessions"
    sessions = sorted((r for _, r in records(boards, output)), key=lambda r: r["group"])
    # m1 posted at 0, 60 and 240 s (b2's deletion is no post): one session; m2 once. Both
    # closed when m3 posted three hours later (30 min gap + 1 min grace); m3's is still open.
    assert sessions == [
        {"group": "1", "session_start": T0, "session_end": T0 + 240 * S, "count": 3, "final": True},
        {
            "group": "2",
            "session_start": T0 + 120 * S,
            "session_end": T0 + 120 * S,
            "count": 1,
            "final": True,
        },
    ]
    assert dead_letters(boards, output) == [("b2", "tombstone (null value): nothing to count")]


def test_boards_per_city_counts_joined_boards_per_minute(boards: Settings) -> None:
    aggregate(boards, "boards-per-city")
    output = f"{boards.board_detail_topic}-boards-per-city"
    windows = sorted(
        (r for _, r in records(boards, output)), key=lambda r: (r["group"], r["window_start"])
    )
    minute = 60 * S
    assert windows == [
        {
            "group": "Busan",
            "window_start": T0,
            "window_end": T0 + minute,
            "count": 1,
            "final": True,
        },
        {
            "group": "Seoul",
            "window_start": T0,
            "window_end": T0 + minute,
            "count": 2,
            "final": True,
        },
        {
            "group": "Seoul",
            "window_start": T0 + minute,
            "window_end": T0 + 2 * minute,
            "count": 1,
            "final": True,
        },
    ]
    assert dead_letters(boards, output) == []
