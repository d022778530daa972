"""The declaration model (boardstream/pipelines/model.py): a declaration reads back to the same
pipeline, what it leaves out is derived from its name, and its defaults are the ones the
platform runs with (the join's options, the SLO and reconciliation settings, the CLI's flags)."""

from __future__ import annotations

import pytest

from boardstream.entrypoints.cli import build_parser
from boardstream.joins import schema
from boardstream.joins.member_table import JoinOptions
from boardstream.pipelines import SHIPPED, Join, Pipeline, load_directory, shipped, to_yaml
from boardstream.pipelines.load import read
from boardstream.settings import PROJECT_ROOT, Settings

SHIPPED_NAMES = ("board_detail", "orders")


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_a_declaration_round_trips_through_its_yaml_and_its_dump(name, tmp_path) -> None:
    pipeline = shipped(name)
    written = tmp_path / f"{name}.yml"
    written.write_text(to_yaml(pipeline))
    assert read(written) == pipeline
    assert Pipeline.model_validate(pipeline.model_dump()) == pipeline
    assert Pipeline.model_validate_json(pipeline.model_dump_json()) == pipeline


def test_the_shipped_directory_holds_both_pipelines() -> None:
    assert tuple(load_directory(SHIPPED)) == SHIPPED_NAMES


def test_outputs_and_position_columns_left_out_are_derived_from_the_name() -> None:
    orders = shipped("orders")
    assert dict(orders.outputs) == {
        "joined": "orders-joined",
        "unmatched": "orders-unmatched",
        "dead_letters": "orders-dlq",
        "tick": "orders-join-tick",
    }
    assert list(orders.sink.columns.items())[-6:] == [
        ("stream_partition", "stream.ROWPARTITION"),
        ("stream_offset", "stream.ROWOFFSET"),
        ("table_partition", "table.ROWPARTITION"),
        ("table_offset", "table.ROWOFFSET"),
        ("joined_partition", "joined.ROWPARTITION"),
        ("joined_offset", "joined.ROWOFFSET"),
    ]


def test_board_detail_declares_the_topics_and_table_of_the_platform() -> None:
    board_detail, settings = shipped("board_detail"), Settings()
    assert (board_detail.stream.topic, board_detail.table.topic) == (
        settings.board_topic,
        settings.member_topic,
    )
    assert tuple(board_detail.outputs)[:3] == tuple(
        zip(("joined", "unmatched", "dead_letters"), settings.output_topics, strict=True)
    )
    assert board_detail.outputs.tick == settings.join_tick_topic


def test_board_detail_declares_the_sink_table_column_for_column() -> None:
    from boardstream.sink.table import COLUMNS, board_detail

    declared = shipped("board_detail").sink
    assert (declared.table, list(declared.columns)) == (board_detail.name, COLUMNS)


def test_board_detail_declares_the_contract_of_the_join() -> None:
    board_detail = shipped("board_detail")
    assert schema.contract(board_detail.stream.fields) == schema.BOARD_FIELDS
    assert schema.BOARD_ID_MAX_CHARS == 64


def test_the_join_parser_reads_every_declared_type() -> None:
    Field = schema.Field
    assert schema.contract(shipped("orders").stream.fields) == (
        Field("order_id", schema.TEXT, True, 1, 36),
        Field("customer_id", schema.TEXT, True, 1, 36),
        Field("amount", schema.DECIMAL, True, precision=12, scale=2),
        Field("weight_kg", schema.DOUBLE, False),
        Field("gift", schema.BOOLEAN, False),
        Field("note", schema.TEXT, False, 0, 500),
        Field("placed_at", schema.INT64, True),  # epoch_us: an integer to the parser
    )
    assert [field.kind for field in schema.contract(shipped("orders").table.fields)] == [
        schema.TEXT,
        schema.TEXT,
        schema.TEXT,
        schema.DECIMAL,
        schema.BOOLEAN,
        schema.DATE,
        schema.INT64,
    ]


def test_board_detail_waits_as_the_join_does_by_default() -> None:
    join, options = shipped("board_detail").join, JoinOptions()
    assert (join.mode, join.grace_ms, join.max_buffered_per_key) == (
        options.mode,
        options.unmatched_timeout_ms,
        options.max_pending_per_member,
    )


def test_the_platform_runs_with_a_declaration_s_defaults() -> None:
    board_detail, settings, declared = shipped("board_detail"), Settings(), Join()
    assert settings.stream_max_batch_age_s * 1000 == board_detail.slo.max_batch_age_ms
    assert settings.stream_max_lag == board_detail.slo.max_lag
    assert settings.reconcile_watch_rows == board_detail.reconcile.watch_rows
    reconcile = build_parser().parse_args(["reconcile"])
    assert (reconcile.stall_after, reconcile.unmatched_timeout) == (
        board_detail.reconcile.stall_after,
        declared.grace,
    )
    assert JoinOptions().history_retention_ms == declared.history_retention_ms


def test_a_declaration_is_immutable() -> None:
    with pytest.raises(ValueError, match="frozen"):
        shipped("orders").name = "other"


def test_the_docs_example_is_the_shipped_orders_declaration() -> None:
    page = (PROJECT_ROOT / "docs" / "PIPELINES.md").read_text()
    example = page.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert example == (SHIPPED / "orders.yml").read_text()
