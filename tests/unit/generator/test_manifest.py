"""The generator's manifest: per kind, the keys produced, in order; the board ids that
reconciliation expects (every well-formed board, whatever became of its member, never a member
or a malformed record); and a JSON file that reads back to the same manifest, written whole or
not at all, under a timestamped name unless told."""

from __future__ import annotations

import json
import re
from pathlib import Path

from boardstream.generator.manifest import Manifest, default_path
from boardstream.generator.plan import STREAM, TABLE, GeneratorOptions, Plan, PlannedRecord

TOPICS = {TABLE: "t-member", STREAM: "t-board"}


def record(kind: str, key: str, topic: str = STREAM) -> PlannedRecord:
    return PlannedRecord(topic, key.encode(), b"{}", kind)


def manifest() -> Manifest:
    made = Manifest.start(GeneratorOptions(members=2, boards=3, seed=9), TOPICS)
    for kind, key in (
        ("members", "1"),
        ("boards", "b1"),
        ("orphan_boards", "b2"),
        ("boards", "b3"),
        ("late_boards", "b4"),
        ("boards_of_deleted_members", "b5"),
        ("malformed:not_json", "m1"),
        ("member_deletes", "1"),
    ):
        made.add(record(kind, key))
    return made


def test_start_keeps_the_options_and_topics() -> None:
    made = Manifest.start(GeneratorOptions(seed=3), TOPICS)
    assert made.options == {
        "members": 1_000,
        "boards": 1_000,
        "seed": 3,
        "update_ratio": 0.0,
        "deletes": 0,
        "late_members": 0,
        "orphans": 0,
        "malformed": 0,
        "start_ms": 1_735_689_600_000,
    }
    assert (made.topics, made.counts) == (TOPICS, {})


def test_keys_per_kind_in_order_and_counts_by_kind_name() -> None:
    made = manifest()
    assert made.keys["boards"] == ["b1", "b3"]
    assert list(made.counts.items()) == [
        ("boards", 2),
        ("boards_of_deleted_members", 1),
        ("late_boards", 1),
        ("malformed:not_json", 1),
        ("member_deletes", 1),
        ("members", 1),
        ("orphan_boards", 1),
    ]


def test_board_ids_are_every_well_formed_board() -> None:
    assert manifest().board_ids() == {"b1", "b2", "b3", "b4", "b5"}
    assert Manifest.start(GeneratorOptions(), TOPICS).board_ids() == set()


def test_a_plans_manifest_counts_what_the_plan_produces() -> None:
    options = GeneratorOptions(members=4, boards=5, deletes=1, late_members=1, orphans=1)
    made = Manifest.start(options, TOPICS)
    records = list(Plan(options))
    for planned in records:
        made.add(planned)
    assert sum(made.counts.values()) == len(records)
    boards = {r.key.decode() for r in records if r.topic == STREAM}
    assert made.board_ids() == boards and len(boards) == 5


def test_written_json_reads_back_the_same(tmp_path: Path) -> None:
    made = manifest()
    path = tmp_path / "manifests" / "run.json"
    made.write(path)
    assert sorted(p.name for p in path.parent.iterdir()) == ["run.json"]  # no .tmp left
    data = json.loads(path.read_text())
    assert list(data) == ["options", "topics", "counts", "keys"]
    assert list(data["keys"]) == sorted(data["keys"])
    assert data["counts"] == made.counts
    read = Manifest.read(path)
    assert read.to_json() == made.to_json()
    read.add(record("boards", "b6"))  # a read manifest takes new keys like a new one
    assert read.keys["boards"] == ["b1", "b3", "b6"]
    read.add(record("late_members", "7", topic=TABLE))
    assert read.counts["late_members"] == 1


def test_the_default_path_is_timestamped_per_seed(tmp_path: Path) -> None:
    path = default_path(tmp_path, 42)
    assert path.parent == tmp_path / "manifests"
    assert re.fullmatch(r"\d{8}T\d{6}-seed42\.json", path.name)
