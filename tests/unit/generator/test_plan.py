"""The generator's plan: deterministic, with every join case where the manifest says it is."""

from __future__ import annotations

import json

import pytest

from boardstream.errors import InvalidOptionError
from boardstream.generator.plan import MALFORMED_KINDS, GeneratorOptions, Plan

OPTIONS = GeneratorOptions(
    members=300,
    boards=400,
    seed=7,
    update_ratio=0.5,
    deletes=12,
    late_members=9,
    orphans=11,
    malformed=10,
)


def records(options: GeneratorOptions = OPTIONS) -> list:
    return list(Plan(options))


def test_same_seed_same_bytes_and_other_seed_differs() -> None:
    first = [(r.topic, r.key, r.value) for r in records()]
    again = [(r.topic, r.key, r.value) for r in records()]
    other = [
        (r.topic, r.key, r.value)
        for r in records(GeneratorOptions(**{**OPTIONS.__dict__, "seed": 8}))
    ]
    assert first == again
    assert first != other


def test_counts_per_kind() -> None:
    plan = Plan(OPTIONS)
    kinds: dict[str, int] = {}
    for record in plan:
        kinds[record.kind] = kinds.get(record.kind, 0) + 1
    boards = sum(n for k, n in kinds.items() if "boards" in k)
    assert boards == 400
    assert kinds["members"] == 300 - 9
    assert kinds["late_members"] == 9
    assert kinds["member_updates"] == 150
    assert kinds["member_deletes"] == 12
    assert kinds["orphan_boards"] == 11
    assert sum(n for k, n in kinds.items() if k.startswith("malformed:")) == 10
    assert sum(kinds.values()) == plan.size


def test_late_members_come_after_all_their_boards() -> None:
    produced_at: dict[int, int] = {}
    last_board: dict[int, int] = {}
    for position, record in enumerate(records()):
        if record.topic == "member" and record.value is not None:
            produced_at.setdefault(record.member_id, position)
        if record.kind == "late_boards":
            last_board[record.member_id] = position
    assert len(last_board) == 9
    for member_id, position in last_board.items():
        assert produced_at[member_id] > position


def test_orphans_name_members_never_produced() -> None:
    plan = records()
    produced = {r.member_id for r in plan if r.topic == "member"}
    orphans = [r for r in plan if r.kind == "orphan_boards"]
    assert len(orphans) == 11
    assert all(r.member_id not in produced for r in orphans)


def test_boards_of_deleted_members_follow_their_tombstone() -> None:
    deleted_at: dict[int, int] = {}
    for position, record in enumerate(records()):
        if record.kind == "member_deletes":
            assert record.value is None
            deleted_at[record.member_id] = position
        elif record.kind == "boards_of_deleted_members":
            assert position > deleted_at[record.member_id]
        elif record.topic == "member" and record.member_id in deleted_at:
            pytest.fail(f"member {record.member_id} produced again after its tombstone")
    assert len(deleted_at) == 12


def test_well_formed_records_have_the_production_shape() -> None:
    for record in records():
        if record.kind.startswith("malformed") or record.value is None:
            continue
        payload = json.loads(record.value)
        if record.topic == "member":
            assert set(payload) == {
                "member_id",
                "nickname",
                "city",
                "phone",
                "created_at",
                "modified_at",
            }
            assert isinstance(payload["member_id"], int)
            assert record.key == str(payload["member_id"]).encode()
        else:
            assert set(payload) == {
                "id",
                "member_id",
                "title",
                "body",
                "created_ts",
                "created_at",
                "modified_at",
            }
            assert len(payload["id"]) == 24
            int(payload["id"], 16)
            assert isinstance(payload["member_id"], int)
            assert isinstance(payload["created_ts"], int)
            assert record.key == payload["id"].encode()


def _flaw(value: bytes) -> str:
    try:
        payload = json.loads(value)
    except ValueError:
        return "not_json"
    if "member_id" not in payload:
        return "missing_key_field"
    if isinstance(payload["member_id"], list):
        return "wrong_type"
    if isinstance(payload["member_id"], str):
        return "member_id_text"
    return "oversized" if len(value) > 100_000 else "none"


def test_every_malformed_record_has_the_flaw_it_is_labelled_with() -> None:
    malformed = [r for r in records() if r.kind.startswith("malformed:")]
    assert sorted({r.kind.split(":")[1] for r in malformed}) == sorted(MALFORMED_KINDS)
    for record in malformed:
        assert _flaw(record.value) == record.kind.split(":")[1]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"members": -1}, "members must be >= 0"),
        ({"update_ratio": -0.1}, "update ratio must be"),
        ({"late_members": 200, "deletes": 200}, "cannot exceed members"),
        ({"orphans": 399, "late_members": 9}, "cannot exceed boards"),
    ],
)
def test_impossible_options_are_refused(change: dict, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        GeneratorOptions(**{**OPTIONS.__dict__, **change})
