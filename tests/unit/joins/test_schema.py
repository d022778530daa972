"""The join's contract and layouts (boardstream/joins/schema.py): the DDL text Spark is given,
the record contract the parser enforces, and the state layouts a checkpoint stores. The state
layouts are pinned exactly: a reordered or renamed column would make every existing checkpoint
unreadable, so such a change must be a deliberate edit here too."""

from __future__ import annotations

import dataclasses

import pytest

from boardstream.joins import schema
from boardstream.joins.schema import INT64, TEXT, TIMESTAMP, Field

SPARK_TYPES = {"string", "bigint", "int", "boolean"}
LAYOUTS = {
    "INPUT": schema.INPUT,
    "MEMBER": schema.MEMBER,
    "PENDING": schema.PENDING,
    "OUTPUT": schema.OUTPUT,
}


def test_ddl_quotes_every_name_and_joins_with_commas() -> None:
    columns = (("board_id", "string"), ("offset", "bigint"), ("deleted", "boolean"))
    assert schema.ddl(columns) == "`board_id` string, `offset` bigint, `deleted` boolean"
    assert schema.ddl(()) == ""


def test_names_keep_the_layout_order() -> None:
    assert schema.names((("b", "int"), ("a", "string"))) == ["b", "a"]
    assert schema.names(()) == []


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_each_layout_has_unique_names_of_known_spark_types(name: str) -> None:
    layout = LAYOUTS[name]
    names = schema.names(layout)
    assert len(names) == len(set(names)), f"{name} repeats a column"
    assert {kind for _, kind in layout} <= SPARK_TYPES


def test_the_member_state_layout_is_pinned() -> None:
    assert schema.ddl(schema.MEMBER) == (
        "`nickname` string, `city` string, `phone` string, `created_at` string, "
        "`modified_at` string, `valid_from_ms` bigint, `partition` int, `offset` bigint, "
        "`deleted` boolean"
    )


def test_the_pending_state_layout_is_pinned() -> None:
    assert schema.ddl(schema.PENDING) == (
        "`board_id` string, `title` string, `body` string, `created_ts` bigint, "
        "`created_at` string, `modified_at` string, `partition` int, `offset` bigint, "
        "`timestamp_ms` bigint, `arrived_ms` bigint"
    )


def test_the_input_layout_is_pinned() -> None:
    assert schema.ddl(schema.INPUT) == (
        "`kind` string, `member_id` bigint, `event_ms` bigint, `timestamp_ms` bigint, "
        "`partition` int, `offset` bigint, `board_id` string, `title` string, `body` string, "
        "`created_ts` bigint, `nickname` string, `city` string, `phone` string, "
        "`created_at` string, `modified_at` string"
    )


def test_the_output_layout_is_pinned() -> None:
    assert schema.ddl(schema.OUTPUT) == (
        "`outcome` string, `reason` string, `board_id` string, `member_id` bigint, "
        "`nickname` string, `city` string, `phone` string, `title` string, `body` string, "
        "`created_ts` bigint, `created_at` string, `modified_at` string, "
        "`member_modified_at` string, `board_partition` int, `board_offset` bigint, "
        "`board_timestamp_ms` bigint, `member_partition` int, `member_offset` bigint"
    )


def test_the_board_contract() -> None:
    assert (
        Field("id", TEXT, required=True, min_chars=1, max_chars=64),
        Field("member_id", INT64, required=True),
        Field("title", TEXT, required=False),
        Field("body", TEXT, required=False),
        Field("created_ts", INT64, required=True),
        Field("created_at", TEXT, required=False),
        Field("modified_at", TEXT, required=False),
    ) == schema.BOARD_FIELDS


def test_the_member_contract() -> None:
    assert (
        Field("member_id", INT64, required=True),
        Field("nickname", TEXT, required=False),
        Field("city", TEXT, required=False),
        Field("phone", TEXT, required=False),
        Field("created_at", TEXT, required=False),
        Field("modified_at", TIMESTAMP, required=True),
    ) == schema.MEMBER_FIELDS


def test_board_ids_are_bounded_by_the_table_column_size() -> None:
    (board_id,) = [f for f in schema.BOARD_FIELDS if f.name == "id"]
    assert board_id.max_chars == schema.BOARD_ID_MAX_CHARS == 64


def test_text_may_not_hold_the_character_postgresql_cannot_store() -> None:
    assert schema.FORBIDDEN_CHAR == "\x00"


def test_a_field_is_unbounded_text_unless_told_and_immutable() -> None:
    field = Field("nickname", TEXT, required=False)
    assert (field.min_chars, field.max_chars) == (0, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        field.name = "city"
