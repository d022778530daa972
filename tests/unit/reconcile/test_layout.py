"""The reconciliation's layouts are derived from a pipeline's declaration: for board_detail the
ones its digest ledger was always taken over (the literals below were readers.py's own), so a
ledger written before the derivation still agrees with every record read after it."""

from __future__ import annotations

from boardstream.joins import schema
from boardstream.pipelines import shipped
from boardstream.reconcile.layout import ReconcileLayout
from boardstream.sink import table as sink_table

BOARD_FIELDS = (
    ("member_id", "bigint"),
    ("title", "string"),
    ("body", "string"),
    ("created_ts", "bigint"),
    ("created_at", "string"),
    ("modified_at", "string"),
)
MEMBER_FIELDS = (("nickname", "string"), ("city", "string"), ("phone", "string"))


def test_board_detail_reads_and_digests_what_it_always_did() -> None:
    layout = ReconcileLayout.of(shipped("board_detail"))
    assert layout.record == tuple(c for c in schema.OUTPUT if c[0] != "outcome")
    # readers.py's own definition: the table's columns but the joined record's position.
    assert layout.content_names == [
        c for c in sink_table.COLUMNS if c not in ("detail_partition", "detail_offset")
    ]
    assert layout.types == {
        **dict(layout.content),
        "detail_partition": "int",
        "detail_offset": "bigint",
    }
    assert layout.stream_fields == BOARD_FIELDS
    board = ("board_id", *(name for name, _ in BOARD_FIELDS))
    assert [name for name, _ in layout.stream_in_source] == list(board)
    assert layout.stream_in_source[0] == ("board_id", "id")
    assert layout.stream_in_output == tuple((name, name) for name in board)
    assert layout.table_fields == (*MEMBER_FIELDS, ("modified_at", "string"))
    assert layout.table_in_output == (
        *((name, name) for name, _ in MEMBER_FIELDS),
        ("modified_at", "member_modified_at"),
    )
    assert (layout.table_key, layout.table_key_column, layout.key_type) == (
        "member_id",
        "member_id",
        "bigint",
    )


def test_a_sink_that_renames_and_drops_fields_digests_only_what_it_keeps() -> None:
    layout = ReconcileLayout.of(shipped("orders"))
    # weight_kg and note are not kept: no output carries them, so no digest may read them.
    assert layout.stream_fields == (
        ("customer_id", "string"),
        ("amount", "decimal(12,2)"),
        ("gift", "boolean"),
        ("placed_at", "bigint"),
    )
    assert layout.stream_in_source[0] == ("order_id", "order_id")
    # The table's fields under their own names, read from the columns that renamed them.
    assert layout.table_in_output == (
        ("name", "customer_name"),
        ("credit_limit", "credit_limit"),
        ("vip", "vip"),
        ("since", "customer_since"),
    )
    # The table's key (id) is not kept; the outputs hold it as the stream's customer_id.
    assert (layout.table_key, layout.table_key_column, layout.key_type) == (
        "id",
        "customer_id",
        "string",
    )
    assert layout.joined_position == ("joined_partition", "joined_offset")
