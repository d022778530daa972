"""The digest ledger's pure parts: its tables' Arrow schemas are the readers' columns and types,
rows are conformed to a table (missing nullable columns as NULL, anything else an error, never
dropped or wrapped), and output frames map to and from ``board_detail_reconcile_output``."""

from __future__ import annotations

import pyarrow as pa
import pytest

from boardstream.errors import BoardstreamError
from boardstream.reconcile.incremental import digest_ledger as ledger
from boardstream.reconcile.incremental.digest_ledger import DigestLedger
from tests.store import LEDGER

# The readers' frames (readers.sources, details, members) in their column order.
SOURCES = ["board_id", "source_partition", "source_offset", "board_digest"]
MEMBERS = ["member_id", "member_partition", "member_offset", "member_digest", "tombstone"]
DETAILS = [
    "board_id",
    "member_id",
    "source_partition",
    "source_offset",
    "detail_partition",
    "detail_offset",
    "digest",
    "board_digest",
    "member_partition",
    "member_offset",
    "member_digest",
]


def test_the_tables_have_the_readers_columns_and_types() -> None:
    assert ledger.arrow_schema(LEDGER.source_table) == pa.schema(
        [
            ("board_id", pa.string()),
            ("source_partition", pa.int32()),
            ("source_offset", pa.int64()),
            ("board_digest", pa.int64()),
        ]
    )
    assert ledger.arrow_schema(LEDGER.member_table) == pa.schema(
        [
            ("member_id", pa.int64()),
            ("member_partition", pa.int32()),
            ("member_offset", pa.int64()),
            ("member_digest", pa.int64()),
            ("tombstone", pa.bool_()),
        ]
    )
    assert ledger.arrow_schema(LEDGER.source_table).names == SOURCES
    assert ledger.arrow_schema(LEDGER.member_table).names == MEMBERS
    assert list(ledger.DETAIL_COLUMNS) == DETAILS
    assert all(t.name.startswith("board_detail_reconcile_") for t in LEDGER.metadata.sorted_tables)


def test_each_pipeline_has_its_own_tables_its_key_typed_as_declared() -> None:
    """Two pipelines share a database: their ledgers' tables, indexes and locks are apart, and
    a text table key is a text column (orders' customers), an int64 one a bigint."""
    orders = DigestLedger.of("orders", "string")
    assert DigestLedger.of("orders", "string") is orders
    names = {t.name for t in orders.metadata.sorted_tables}
    assert names == {
        f"orders_reconcile_{part}"
        for part in ("source", "output", "member", "refused", "cursor", "unseen")
    }
    assert not names & {t.name for t in LEDGER.metadata.sorted_tables}
    indexes = {i.name for t in orders.metadata.sorted_tables for i in t.indexes}
    assert all(name.startswith(("orders_", "ix_orders_")) for name in indexes)
    assert ledger.arrow_schema(orders.member_table, ["member_id"]) == pa.schema(
        [("member_id", pa.string())]
    )
    assert ledger.arrow_schema(LEDGER.output_table, ["member_id"]) == pa.schema(
        [("member_id", pa.int64())]
    )
    assert orders.lock_key != LEDGER.lock_key
    with pytest.raises(BoardstreamError, match="a table key of type date has no ledger column"):
        DigestLedger.of("dated", "date")


def test_conform_orders_columns_and_fills_nullable_ones() -> None:
    rows = pa.table({"source_offset": [7], "source_partition": [1]})
    conformed = ledger.conform(LEDGER.source_table, rows)
    assert conformed.schema == ledger.arrow_schema(LEDGER.source_table)
    assert conformed.to_pylist() == [
        {"board_id": None, "source_partition": 1, "source_offset": 7, "board_digest": None}
    ]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (pa.table({"source_partition": [1], "source_offset": [7], "extra": [1]}), "no columns"),
        (pa.table({"board_id": ["a"], "source_offset": [7]}), "lack column source_partition"),
        (pa.table({"source_partition": [2**31], "source_offset": [7]}), None),
        (
            pa.table({"source_partition": [1], "source_offset": pa.array([2**63], pa.uint64())}),
            None,
        ),
    ],
)
def test_conform_refuses_what_it_cannot_store(rows: pa.Table, message: str | None) -> None:
    with pytest.raises((BoardstreamError, pa.ArrowInvalid), match=message):
        ledger.conform(LEDGER.source_table, rows)


def test_a_member_version_needs_its_tombstone_flag() -> None:
    with pytest.raises(BoardstreamError, match="tombstone"):
        ledger.conform(
            LEDGER.member_table, pa.table({"member_partition": [0], "member_offset": [0]})
        )


def test_output_rows_map_to_and_from_the_details_frame() -> None:
    detail = {name: index for index, name in enumerate(DETAILS)} | {"board_id": "b1"}
    rows = LEDGER.outputs("joined", pa.Table.from_pylist([detail]))
    assert rows.schema == ledger.arrow_schema(LEDGER.output_table)
    (row,) = rows.to_pylist()
    assert row["holder"] == "joined"
    assert (row["record_partition"], row["record_offset"]) == (4, 5)
    back = ledger.as_details(rows)
    assert back.column_names == DETAILS
    assert back.to_pylist() == [detail]


def test_unmatched_rows_keep_nulls_where_a_joined_record_has_values() -> None:
    frame = pa.table(
        {
            "board_id": ["b1"],
            "source_partition": [0],
            "source_offset": [3],
            "board_digest": [9],
            "record_partition": [1],
            "record_offset": [2],
        }
    )
    (row,) = LEDGER.outputs("unmatched", frame).to_pylist()
    assert row == {
        "holder": "unmatched",
        "record_partition": 1,
        "record_offset": 2,
        "board_id": "b1",
        "member_id": None,
        "source_partition": 0,
        "source_offset": 3,
        "digest": None,
        "board_digest": 9,
        "member_partition": None,
        "member_offset": None,
        "member_digest": None,
    }


def test_unknown_holders_and_tables_are_errors() -> None:
    with pytest.raises(BoardstreamError, match="holder"):
        LEDGER.outputs("pending", pa.table({"record_partition": [0], "record_offset": [0]}))
    with pytest.raises(BoardstreamError, match="is not a table of board_detail's ledger"):
        LEDGER._own(DigestLedger.of("orders", "string").source_table)
    # An output frame without its record position cannot be stored.
    with pytest.raises(BoardstreamError, match="record_partition"):
        LEDGER.outputs("unmatched", pa.table({"board_id": ["b1"]}))
