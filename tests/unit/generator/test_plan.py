"""The generator's plan: deterministic, with every join case where the manifest says it is, for
the shipped pipeline (its data set byte for byte what it was before the generator took
declarations) and for any declared one (orders: text keys, decimals, a date, epoch times)."""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal

import pytest

from boardstream.errors import InvalidOptionError
from boardstream.generator.board_records import MALFORMED_KINDS
from boardstream.generator.declared_records import FLAWS
from boardstream.generator.plan import TABLE, GeneratorOptions, Plan
from boardstream.pipelines import Pipeline, shipped

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


ORDERS = shipped("orders")
EACH_PIPELINE = pytest.mark.parametrize("pipeline", [None, ORDERS], ids=["board_detail", "orders"])


def records(options: GeneratorOptions = OPTIONS, pipeline: Pipeline | None = None) -> list:
    return list(Plan(options, pipeline))


@pytest.mark.parametrize(
    ("options", "digest"),
    [
        (OPTIONS, "6a1b4c05b8ed990350b58366354421821f7c6605d127df7fc0e1b6f45b65bc34"),
        (GeneratorOptions(), "eb815e28db4c55316d183ca48fbd5ca72d9aea8e755306d9d60d2543826c7427"),
    ],
)
def test_the_shipped_data_set_is_byte_for_byte_what_it_was(
    options: GeneratorOptions, digest: str
) -> None:
    """Pinned from the generator before it took declarations (commit f034593): a seed still
    means the records the README's demo and the benchmarks measured."""
    planned = hashlib.sha256()
    for r in records(options):
        planned.update(repr((r.topic == TABLE, r.key, r.value, r.kind, r.row)).encode())
    assert planned.hexdigest() == digest


@EACH_PIPELINE
def test_same_seed_same_bytes_and_other_seed_differs(pipeline: Pipeline | None) -> None:
    first = [(r.topic, r.key, r.value) for r in records(pipeline=pipeline)]
    again = [(r.topic, r.key, r.value) for r in records(pipeline=pipeline)]
    other = [
        (r.topic, r.key, r.value)
        for r in records(GeneratorOptions(**{**OPTIONS.__dict__, "seed": 8}), pipeline)
    ]
    assert first == again
    assert first != other


@EACH_PIPELINE
def test_counts_per_kind(pipeline: Pipeline | None) -> None:
    plan = Plan(OPTIONS, pipeline)
    kinds: dict[str, int] = {}
    for record in plan:
        kinds[record.kind] = kinds.get(record.kind, 0) + 1
    named = plan.kinds
    assert sum(kinds[k] for k in named.well_formed) == 400
    assert kinds[named.rows] == 300 - 9
    assert kinds[named.late_rows] == 9
    assert kinds[named.updates] == 150
    assert kinds[named.deletes] == 12
    assert kinds[named.orphans] == 11
    assert sum(n for k, n in kinds.items() if k.startswith("malformed:")) == 10
    assert sum(kinds.values()) == plan.size


def test_a_declared_pipelines_kinds_are_its_topics_in_the_singular() -> None:
    assert Plan(OPTIONS, ORDERS).kinds.well_formed == (
        "orders",
        "late_orders",
        "orphan_orders",
        "orders_of_deleted_customers",
    )
    assert Plan(OPTIONS).kinds.well_formed == (
        "boards",
        "late_boards",
        "orphan_boards",
        "boards_of_deleted_members",
    )


@EACH_PIPELINE
def test_late_rows_come_after_all_the_records_naming_them(pipeline: Pipeline | None) -> None:
    plan = Plan(OPTIONS, pipeline)
    produced_at: dict[int, int] = {}
    last_record: dict[int, int] = {}
    for position, record in enumerate(plan):
        if record.topic == TABLE and record.value is not None:
            produced_at.setdefault(record.row, position)
        if record.kind == plan.kinds.late_records:
            last_record[record.row] = position
    assert len(last_record) == 9
    for row, position in last_record.items():
        assert produced_at[row] > position


@EACH_PIPELINE
def test_orphans_name_rows_never_produced(pipeline: Pipeline | None) -> None:
    plan = Plan(OPTIONS, pipeline)
    planned = list(plan)
    produced = {r.row for r in planned if r.topic == TABLE}
    orphans = [r for r in planned if r.kind == plan.kinds.orphans]
    assert len(orphans) == 11
    assert all(r.row not in produced for r in orphans)


@EACH_PIPELINE
def test_records_of_deleted_rows_follow_their_tombstone(pipeline: Pipeline | None) -> None:
    """In production order and on the timeline: a record after the tombstone is no earlier
    than the deletion, one before it earlier (so an as-of join agrees with the manifest)."""
    plan = Plan(OPTIONS, pipeline)
    planned = list(plan)
    deleted_at: dict[int, int] = {}
    deleted_ms = {r.row: r.at_ms for r in planned if r.kind == plan.kinds.deletes}
    for position, record in enumerate(planned):
        if record.kind == plan.kinds.deletes:
            assert record.value is None
            deleted_at[record.row] = position
        elif record.kind == plan.kinds.of_deleted:
            assert position > deleted_at[record.row]
            assert record.at_ms >= deleted_ms[record.row]
        elif record.topic == TABLE and record.row in deleted_at:
            pytest.fail(f"row {record.row} produced again after its tombstone")
        elif record.kind == plan.kinds.records and record.row in deleted_ms:
            assert record.at_ms < deleted_ms[record.row]
    assert len(deleted_at) == 12


def test_a_declared_pipelines_records_hold_its_fields_in_their_declared_forms() -> None:
    """orders: the record's key is its id, its reference the key of the row it names (a text
    key, ``k<row>``), a decimal written with its scale's digits, epoch microseconds on the
    generator's timeline; a row's key is its Kafka key, its version time in epoch ms."""
    rows: dict[int, list[int]] = {}
    for record in records(pipeline=ORDERS):
        if record.kind.startswith("malformed:") or record.value is None:
            continue
        payload = json.loads(record.value, parse_float=Decimal)
        if record.topic == TABLE:
            assert payload["id"] == f"k{record.row}" and record.key == payload["id"].encode()
            rows.setdefault(record.row, []).append(payload["updated_at"])
            assert set(payload) <= set(ORDERS.table.fields)
            assert {"id", "updated_at"} <= set(payload)
            if "credit_limit" in payload:
                assert -payload["credit_limit"].as_tuple().exponent == 2
            if "since" in payload:
                assert len(payload["since"]) == 10 and payload["since"][4] == "-"
        else:
            assert record.key == payload["order_id"].encode() and len(payload["order_id"]) == 24
            assert payload["customer_id"] == f"k{record.row}"
            assert -payload["amount"].as_tuple().exponent == 2
            assert payload["placed_at"] % 1_000 == 0  # epoch µs of a whole millisecond
            assert set(payload) <= set(ORDERS.stream.fields)
            assert {"order_id", "customer_id", "amount", "placed_at"} <= set(payload)
    # Each row's versions in order, its first at start + row * 37 s.
    for row, times in rows.items():
        assert times[0] == OPTIONS.start_ms + row * 37_000
        assert times == sorted(times)


def test_well_formed_records_have_the_production_shape() -> None:
    for record in records():
        if record.kind.startswith("malformed") or record.value is None:
            continue
        payload = json.loads(record.value)
        if record.topic == TABLE:
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


def test_keys_a_declared_key_cannot_hold_are_refused_before_any_record() -> None:
    """A text key of at most 2 characters holds ``k1``..``k9``: 300 rows and 11 orphans are
    refused when the plan is made, naming the key and the option, not midway through."""
    narrow = ORDERS.model_copy(deep=True)
    key = narrow.table.fields["id"].model_copy(update={"max_chars": 2})
    narrow = narrow.model_copy(
        update={
            "table": narrow.table.model_copy(update={"fields": {**narrow.table.fields, "id": key}})
        }
    )
    with pytest.raises(InvalidOptionError, match="id holds at most 2 characters") as refused:
        Plan(OPTIONS, narrow)
    assert "'k311' of row 311" in str(refused.value)
    assert len(list(Plan(GeneratorOptions(members=9, boards=3, seed=1), narrow))) == 12


def _declared_flaw(value: bytes) -> str:
    try:
        payload = json.loads(value)
    except ValueError:
        return "not_json"
    if "customer_id" not in payload:
        return "missing_key_field"
    if isinstance(payload["customer_id"], list):
        return "wrong_type"
    if not isinstance(payload["customer_id"], str):
        return "key_of_other_type"
    return "oversized" if len(value) > 100_000 else "none"


def test_every_malformed_declared_record_has_the_flaw_it_is_labelled_with() -> None:
    malformed = [r for r in records(pipeline=ORDERS) if r.kind.startswith("malformed:")]
    assert sorted({r.kind.split(":")[1] for r in malformed}) == sorted(FLAWS)
    for record in malformed:
        assert _declared_flaw(record.value) == record.kind.split(":")[1]
        if record.kind != "malformed:not_json":
            assert json.loads(record.value)["order_id"].encode() == record.key


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
