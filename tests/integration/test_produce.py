"""The generator's records round-trip through a real broker exactly as its manifest says."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from boardstream.generator.plan import GeneratorOptions
from boardstream.generator.producer import produce
from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import create_topics, platform_topics
from tests.pipeline import consume_all

OPTIONS = GeneratorOptions(
    members=500,
    boards=800,
    seed=3,
    update_ratio=0.2,
    deletes=5,
    late_members=4,
    orphans=6,
    malformed=10,
)


def _topics(kafka, prefix: str):
    settings = kafka.with_topic_prefix(prefix)
    create_topics(admin_client(settings), settings, platform_topics(settings))
    return settings


@pytest.fixture(scope="module")
def produced(kafka, tmp_path_factory):
    settings = _topics(kafka, "rt")
    manifest = produce(
        settings, OPTIONS, tmp_path_factory.mktemp("m") / "manifest.json", progress_interval_s=60
    )
    return settings, manifest


def test_counts_per_kind_match_the_manifest(produced) -> None:
    settings, manifest = produced
    members = consume_all(settings, settings.member_topic)
    boards = consume_all(settings, settings.board_topic)
    counts = manifest.counts
    assert (
        len(members)
        == counts["members"]
        + counts["late_members"]
        + counts["member_updates"]
        + counts["member_deletes"]
    )
    malformed = sum(n for kind, n in counts.items() if kind.startswith("malformed:"))
    assert malformed == 10
    assert len(boards) == 800 + malformed
    assert (
        counts["late_members"] == 4
        and counts["orphan_boards"] == 6
        and counts["member_deletes"] == 5
    )
    assert sum(1 for _, value in members if value is None) == 5


def test_keys_and_field_types_round_trip(produced) -> None:
    settings, manifest = produced
    boards = consume_all(settings, settings.board_topic)
    board_keys = Counter(key.decode() for key, _ in boards)
    malformed_keys = {
        k for kind, keys in manifest.keys.items() if kind.startswith("malformed:") for k in keys
    }
    assert set(board_keys) == manifest.board_ids() | malformed_keys
    assert max(board_keys.values()) == 1
    for key, value in boards:
        if key.decode() in malformed_keys:
            continue
        payload = json.loads(value)
        assert payload["id"] == key.decode()
        assert type(payload["member_id"]) is int and type(payload["created_ts"]) is int
        assert all(type(payload[f]) is str for f in ("title", "body", "created_at", "modified_at"))
    members = consume_all(settings, settings.member_topic)
    expected = Counter(
        key
        for kind in ("members", "late_members", "member_updates", "member_deletes")
        for key in manifest.keys[kind]
    )
    assert Counter(key.decode() for key, _ in members) == expected
    for key, value in members:
        if value is not None:
            payload = json.loads(value)
            assert str(payload["member_id"]) == key.decode()
            assert type(payload["member_id"]) is int


def test_same_seed_reproduces_the_same_records(produced, tmp_path) -> None:
    settings, _ = produced
    again = _topics(settings, "rt2")
    produce(again, OPTIONS, tmp_path / "again.json", progress_interval_s=60)
    for first_topic, second_topic in [
        (settings.board_topic, again.board_topic),
        (settings.member_topic, again.member_topic),
    ]:
        assert sorted(consume_all(settings, first_topic), key=repr) == sorted(
            consume_all(again, second_topic), key=repr
        )
