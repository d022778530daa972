"""The join's processor refuses integer input that pandas turned into floats: storing rounded
member ids would lose members silently (pure seam: a pandas frame, no Spark)."""

from __future__ import annotations

import pandas as pd
import pytest

from boardstream.joins.processor import INPUT_COLUMNS, input_rows


def frame(member_ids: list) -> pd.DataFrame:
    row = {name: 0 for name in INPUT_COLUMNS} | {"kind": "board", "board_id": "b"}
    return pd.DataFrame([row | {"member_id": m} for m in member_ids])


def test_integer_columns_come_through_exact() -> None:
    (row,) = list(input_rows(frame([2**63 - 1])))
    assert row[INPUT_COLUMNS.index("member_id")] == 2**63 - 1


def test_a_float_member_id_column_stops_the_join() -> None:
    with pytest.raises(ValueError, match=r"integer input columns arrived as floats.*member_id"):
        list(input_rows(frame([1, None])))
