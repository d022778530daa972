"""`boardstream produce --production-scale` as docs/COMMANDS.md writes it: 442,128 members and
447,017 boards, the counts it prints equal to its manifest and to what the topics hold."""

from __future__ import annotations

import json
import logging
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from boardstream.joins.topics import JoinTopics
from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import create_topics, platform_topics
from boardstream.pipelines import Pipeline
from boardstream.settings import Settings
from tests.fixtures import cli
from tests.unit.pipelines.declarations import changed, write

pytestmark = pytest.mark.integration
log = logging.getLogger(__name__)

MEMBERS, BOARDS = 442_128, 447_017


def records_in(settings: Settings, topic: str) -> int:
    """Records the topic holds: end minus start offsets per partition (no transactions, no
    compaction yet on a fresh topic, so every offset is one record)."""
    consumer = Consumer({**settings.to_confluent(), "group.id": f"count-{topic}"})
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    total = 0
    for partition in partitions:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        total += high - low
    consumer.close()
    return total


def test_production_scale_counts_match_the_topics(kafka: Settings, tmp_path: Path) -> None:
    settings = kafka.with_topic_prefix(f"prod{uuid.uuid4().hex[:6]}", var_dir=tmp_path)
    create_topics(admin_client(settings), settings, platform_topics(settings))
    env = {
        "BOARDSTREAM_MEMBER_TOPIC": settings.member_topic,
        "BOARDSTREAM_BOARD_TOPIC": settings.board_topic,
    }
    started = time.monotonic()
    result = cli(settings, "produce", "--production-scale", timeout=900, extra_env=env)
    log.info("produce --production-scale: %.0f s", time.monotonic() - started)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    *counts, last = result.stdout.splitlines()
    assert counts == [f"boards: {BOARDS:,}", f"members: {MEMBERS:,}"]
    manifest = Path(last.removeprefix("manifest: "))
    assert (manifest.parent, manifest.name[-12:]) == (tmp_path / "manifests", "-seed42.json")

    written = json.loads(manifest.read_text())
    assert written["counts"] == {"boards": BOARDS, "members": MEMBERS}
    assert len(set(written["keys"]["members"])) == MEMBERS
    assert len(set(written["keys"]["boards"])) == BOARDS
    assert records_in(settings, settings.member_topic) == MEMBERS
    assert records_in(settings, settings.board_topic) == BOARDS


# docs/COMMANDS.md's example load, each kind as the manifest counts it.
EXAMPLE = ["--members", "5000", "--boards", "8000", "--late-members", "40", "--orphans", "25"]
EXAMPLE += ["--deletes", "50", "--update-ratio", "0.2", "--malformed", "10", "--seed", "42"]
EXAMPLE_COUNTS = {
    "boards": 7_838,
    "boards_of_deleted_members": 38,
    "late_boards": 99,
    "late_members": 40,
    "malformed:member_id_text": 2,
    "malformed:missing_key_field": 2,
    "malformed:not_json": 2,
    "malformed:oversized": 2,
    "malformed:wrong_type": 2,
    "member_deletes": 50,
    "member_updates": 1_000,
    "members": 4_960,
    "orphan_boards": 25,
}


def test_the_example_load_prints_what_the_topics_hold(kafka: Settings, tmp_path: Path) -> None:
    settings = kafka.with_topic_prefix(f"ex{uuid.uuid4().hex[:6]}", var_dir=tmp_path)
    create_topics(admin_client(settings), settings, platform_topics(settings))
    env = {
        "BOARDSTREAM_MEMBER_TOPIC": settings.member_topic,
        "BOARDSTREAM_BOARD_TOPIC": settings.board_topic,
    }
    result = cli(settings, "produce", *EXAMPLE, extra_env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    *counts, last = result.stdout.splitlines()
    assert counts == [f"{kind}: {number:,}" for kind, number in EXAMPLE_COUNTS.items()]
    written = json.loads(Path(last.removeprefix("manifest: ")).read_text())
    assert written["counts"] == EXAMPLE_COUNTS
    assert {kind: len(keys) for kind, keys in written["keys"].items()} == EXAMPLE_COUNTS
    # 5,000 members (40 of them late), an update for one in five, 50 deleted; 8,000 boards.
    members = EXAMPLE_COUNTS["members"] + EXAMPLE_COUNTS["late_members"]
    boards = sum(n for kind, n in EXAMPLE_COUNTS.items() if "board" in kind)
    assert (members, EXAMPLE_COUNTS["member_updates"], boards) == (5_000, 1_000, 8_000)
    assert records_in(settings, settings.member_topic) == 5_000 + 1_000 + 50
    assert records_in(settings, settings.board_topic) == 8_000 + 10


def test_a_declared_pipelines_data_set_onto_its_own_topics(kafka: Settings, tmp_path: Path) -> None:
    """`produce --pipeline orders`, as docs/COMMANDS.md writes it, on a declaration of orders
    with topics of its own: every join case in the numbers its flags ask for, the kinds named
    after its topics, onto its table and stream topics."""
    data = changed({"name": "pc_orders", "stream.topic": "pc-orders", "table.topic": "pc-cust"})
    write(tmp_path, "pc_orders.yml", data)
    declared = Pipeline.model_validate(data)
    settings = kafka.model_copy(update={"var_dir": tmp_path})
    topics = JoinTopics.declared(declared)
    create_topics(admin_client(settings), settings, platform_topics(settings, topics=topics))
    env = {"BOARDSTREAM_PIPELINES_DIR": str(tmp_path)}
    result = cli(settings, "produce", *EXAMPLE, "--pipeline", "pc_orders", extra_env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    *counts, last = result.stdout.splitlines()
    printed = dict(line.split(": ") for line in counts)
    assert list(printed) == sorted(printed)
    # The rows' kinds and the malformed as board_detail's for these flags; which records name a
    # late or deleted row follows the seed's draws, which the records' own values take part in.
    assert {kind: printed[kind] for kind in printed if "pc_order" not in kind} == {
        "late_pc_custs": "40",
        "malformed:key_of_other_type": "2",
        "malformed:missing_key_field": "2",
        "malformed:not_json": "2",
        "malformed:oversized": "2",
        "malformed:wrong_type": "2",
        "pc_cust_deletes": "50",
        "pc_cust_updates": "1,000",
        "pc_custs": "4,960",
    }
    records = {kind: int(printed[kind].replace(",", "")) for kind in printed if "pc_order" in kind}
    assert set(records) == {
        "pc_orders",
        "late_pc_orders",
        "orphan_pc_orders",
        "pc_orders_of_deleted_pc_custs",
    }
    assert sum(records.values()) == 8_000 and records["orphan_pc_orders"] == 25
    assert records["late_pc_orders"] >= 40  # each late row named at least once
    written = json.loads(Path(last.removeprefix("manifest: ")).read_text())
    assert written["topics"] == {"table": "pc-cust", "stream": "pc-orders"}
    assert records_in(settings, "pc-cust") == 5_000 + 1_000 + 50
    assert records_in(settings, "pc-orders") == 8_000 + 10
