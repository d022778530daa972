"""The named records are the schema's layouts: same names, same order (rows cross to Spark and
the state store as plain tuples, so a field out of place would shift every value after it)."""

from __future__ import annotations

import pytest

from boardstream.joins import records, schema


@pytest.mark.parametrize(
    ("record", "layout"),
    [
        (records.InputRow, schema.INPUT),
        (records.Version, schema.MEMBER),
        (records.WaitingBoard, schema.PENDING),
        (records.OutputRow, schema.OUTPUT),
    ],
)
def test_record_fields_are_the_schema_columns(record, layout) -> None:
    assert list(record._fields) == schema.names(layout)


def test_entries_do_not_share_lists() -> None:
    first, second = records.Entry(), records.Entry()
    first.waiting.append(records.WaitingBoard("b", None, None, 1, None, None, 0, 0, 1, 1))
    assert second.waiting == []
