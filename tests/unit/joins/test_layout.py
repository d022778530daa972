"""The join's rows derived from a declaration (boardstream/joins/layout.py): for board_detail
exactly the layouts its checkpoints hold and its outputs carry; for orders its own."""

from __future__ import annotations

from boardstream.joins import schema
from boardstream.joins.layout import JoinLayout
from boardstream.pipelines import shipped


def test_board_details_layouts_are_its_checkpoints_and_its_outputs() -> None:
    layout = JoinLayout.of(shipped("board_detail"))
    assert layout.version == schema.MEMBER
    assert layout.waiting == schema.PENDING
    assert layout.output == (*schema.OUTPUT, ("dead_key", "string"), ("dead_letter", "string"))
    assert layout.key_type == "bigint"
    assert layout.event_index == 3  # created_ts, epoch milliseconds as declared
    assert layout.plan == (
        "stream:0", "key", "table:0", "table:1", "table:2", "stream:1", "stream:2", "stream:3",
        "stream:4", "stream:5", "table:4", "stream.partition", "stream.offset",
        "stream.timestamp", "table.partition", "table.offset",
    )  # fmt: skip


def test_orders_keeps_its_types_its_event_time_in_ms_and_its_sinks_names() -> None:
    layout = JoinLayout.of(shipped("orders"))
    assert layout.key_type == "string"
    assert layout.stream.columns == (
        ("order_id", "string"),
        ("amount", "decimal(12,2)"),
        ("weight_kg", "double"),
        ("gift", "boolean"),
        ("note", "string"),
        ("placed_at", "bigint"),  # epoch microseconds, kept as given
        ("placed_at_ms", "bigint"),  # what the join orders by
    )
    assert layout.event_index == 6 and layout.stream.sources[6] is None
    assert [name for name, _ in layout.table.columns] == [
        "name", "email", "credit_limit", "vip", "since", "updated_at",
    ]  # fmt: skip
    assert dict(layout.table.columns)["since"] == "date"
    output = dict(zip(schema.names(layout.output[2:-2]), layout.plan, strict=True))
    assert output == {
        "order_id": "stream:0",
        "customer_id": "key",
        "customer_name": "table:0",
        "amount": "stream:1",
        "credit_limit": "table:2",
        "vip": "table:3",
        "customer_since": "table:4",
        "gift": "stream:3",
        "placed_at": "stream:5",
        "stream_partition": "stream.partition",
        "stream_offset": "stream.offset",
        "stream_timestamp_ms": "stream.timestamp",
        "table_partition": "table.partition",
        "table_offset": "table.offset",
    }
    assert dict(layout.output)["customer_since"] == "date"
