"""``boardstream state show``'s pure parts (boardstream/spark/state.py): the refusals a user sees
before any state is read, the operator lines, which state variables are listed, and how keys
and values are rendered. The session is a fake passed where the code takes one, answering the
``state-metadata`` read with rows; reading the state rows themselves needs Spark
(tests/integration/test_state_show.py)."""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import Row

from boardstream.errors import BoardstreamError
from boardstream.spark.checkpoint_files import CheckpointFiles
from boardstream.spark.state import _jsonable, require_checkpoint, state_report


class FakeRead:
    def __init__(self, operators: list[Row]) -> None:
        self.operators = operators
        self.loaded: list[tuple[str, str]] = []
        self.format_name = ""

    def format(self, name: str) -> FakeRead:
        self.format_name = name
        return self

    def load(self, path: str) -> FakeRead:
        self.loaded.append((self.format_name, path))
        return self

    def collect(self) -> list[Row]:
        return self.operators


class FakeSpark:
    def __init__(self, operators: list[Row]) -> None:
        self.read = FakeRead(operators)


def operator(operator_id: int, variables: list[str] | None, **properties: Any) -> Row:
    if variables is not None:
        properties["stateVariables"] = [{"stateName": name} for name in variables]
    return Row(
        operatorId=operator_id,
        operatorName="transformWithStateExec",
        numPartitions=3,
        minBatchId=0,
        maxBatchId=41,
        operatorProperties=json.dumps(properties) if properties else None,
    )


def checkpoint(tmp_path: Path) -> str:
    (tmp_path / "ckpt" / "offsets").mkdir(parents=True)
    return (tmp_path / "ckpt").as_uri()


def test_a_directory_without_offsets_is_not_a_checkpoint(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    with pytest.raises(BoardstreamError) as raised:
        require_checkpoint(checkpoint_files, tmp_path)
    assert str(raised.value) == f"{tmp_path} is not a streaming checkpoint (no offsets/)"
    assert require_checkpoint(checkpoint_files, checkpoint(tmp_path)) == f"{tmp_path.as_uri()}/ckpt"


def test_a_query_without_state_is_refused(tmp_path: Path) -> None:
    ckpt = checkpoint(tmp_path)
    spark = FakeSpark([])
    with pytest.raises(BoardstreamError) as raised:
        next(state_report(spark, ckpt))
    assert str(raised.value) == f"{tmp_path / 'ckpt'}: the query keeps no state"
    assert spark.read.loaded == [("state-metadata", str(ckpt))]


def test_an_unknown_variable_is_refused_listing_the_known_ones(tmp_path: Path) -> None:
    ckpt = checkpoint(tmp_path)
    spark = FakeSpark(
        [operator(0, ["members", "$procTimers_keyToTimestamp"]), operator(1, ["alpha"])]
    )
    with pytest.raises(BoardstreamError) as raised:
        next(state_report(spark, ckpt, variable="member"))
    assert str(raised.value) == (
        f"no state variable 'member' in {tmp_path / 'ckpt'}; it has: "
        "$procTimers_keyToTimestamp, alpha, members"
    )


def test_operator_lines_and_timers_skipped(tmp_path: Path) -> None:
    """Spark's own timer variables are not listed unless asked for by name."""
    spark = FakeSpark(
        [
            operator(0, ["$procTimers_keyToTimestamp"], timeMode="ProcessingTime"),
            operator(2, ["$procTimers_timestampToKey"]),
        ]
    )
    assert list(state_report(spark, checkpoint(tmp_path))) == [
        "operator 0 transformWithStateExec (3 partitions, batches 0..41, ProcessingTime time)",
        "operator 2 transformWithStateExec (3 partitions, batches 0..41, no time)",
    ]


def test_an_operator_without_the_asked_variable_shows_only_its_line(tmp_path: Path) -> None:
    spark = FakeSpark([operator(0, ["members"]), operator(1, ["other"])])
    report = state_report(spark, checkpoint(tmp_path), variable="other")
    assert next(report) == (
        "operator 0 transformWithStateExec (3 partitions, batches 0..41, no time)"
    )
    assert next(report) == (
        "operator 1 transformWithStateExec (3 partitions, batches 0..41, no time)"
    )


def test_a_single_field_key_is_its_value() -> None:
    assert _jsonable(Row(member_id=5)) == 5
    assert _jsonable(Row(bucket=Row(value=3))) == {"value": 3}


def test_structs_become_dicts_recursively() -> None:
    value = Row(versions=[Row(nickname="ann", offset=3)], deleted_at_ms=None)
    assert _jsonable(value) == {
        "versions": [{"nickname": "ann", "offset": 3}],
        "deleted_at_ms": None,
    }
    assert json.dumps(_jsonable(value)) == (
        '{"versions": [{"nickname": "ann", "offset": 3}], "deleted_at_ms": null}'
    )


def test_plain_values_lists_and_dicts_pass_through() -> None:
    assert _jsonable([Row(a=1), 2, {"k": Row(b=2, c=3)}]) == [1, 2, {"k": {"b": 2, "c": 3}}]
    assert _jsonable("text") == "text"
    assert _jsonable(None) is None


def test_declared_types_are_shown_exactly() -> None:
    """A decimal keeps its digits, a date and a time their ISO form (json.dumps raised on
    orders' state before: a customer's credit limit, its ``since`` date)."""
    value = Row(credit_limit=Decimal("100.50"), since=date(2020, 2, 29), at=datetime(2025, 1, 2))
    assert _jsonable(value) == {
        "credit_limit": "100.50",
        "since": "2020-02-29",
        "at": "2025-01-02T00:00:00",
    }
