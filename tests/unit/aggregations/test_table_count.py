"""The table-count processor, driven by hand without Spark: per value, how many entities hold it
now. A new value retracts the old one, only changed counts are emitted (a count back to zero
included, and removed from state), a deletion in arrival order forgets the entity while in
event-time order it stays as a marker; dead letters pass through first."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from boardstream.aggregations import table_count
from boardstream.aggregations.holdings import ARRIVAL, EVENT_TIME
from boardstream.aggregations.source import SourceOptions
from boardstream.aggregations.table_count import TableCount, TableCountConfig


class MapState:
    def __init__(self) -> None:
        self.values: dict[tuple, tuple] = {}

    def getValue(self, key: tuple) -> tuple | None:  # Spark's names
        return self.values.get(key)

    def updateValue(self, key: tuple, value: tuple) -> None:
        self.values[key] = value

    def removeKey(self, key: tuple) -> None:
        self.values.pop(key, None)  # as Spark's: removing an absent key is a no-op


class Handle:
    def __init__(self) -> None:
        self.states: dict[str, MapState] = {}
        self.schemas: dict[str, tuple[Any, ...]] = {}

    def getMapState(self, name: str, key: str, value: str, ttl: int | None = None) -> MapState:
        self.schemas[name] = (key, value, ttl)
        return self.states.setdefault(name, MapState())


def frame(*rows: tuple[str, str | None, int, int], dead: tuple[int, str, str] | None = None):
    """(entity, value or None for a tombstone, event_ms, offset) rows on partition 0, and
    optionally one invalid record (offset, dead key, dead letter)."""
    records = [
        {
            "entity": entity,
            "attribute": value,
            "event_ms": event_ms,
            "partition": 0,
            "offset": offset,
            "dead_key": None,
            "dead_letter": None,
        }
        for entity, value, event_ms, offset in rows
    ]
    if dead is not None:
        offset, key, letter = dead
        records.append(
            {
                "entity": None,
                "attribute": None,
                "event_ms": 0,
                "partition": 0,
                "offset": offset,
                "dead_key": key,
                "dead_letter": letter,
            }
        )
    return pd.DataFrame(records)


def started(order: str, handle: Handle, ttl: int | None = None) -> TableCount:
    processor = TableCount(order, ttl)
    processor.init(handle)
    return processor


def run(processor: TableCount, *frames: pd.DataFrame) -> list[list[list[Any]]]:
    return [out.values.tolist() for out in processor.handleInputRows(0, iter(frames), None)]


def counted(value: str, count: int) -> list[str]:
    return ["output", value, json.dumps({"value": value, "count": count})]


def test_the_config_names_its_query() -> None:
    config = TableCountConfig(source=SourceOptions("member"), output_topic="per-city")
    assert config.query_name == "table-count-per-city"
    assert (config.order, config.dlq_topic, config.state_ttl_ms) == (ARRIVAL, None, None)


def test_state_schemas_and_ttl() -> None:
    handle = Handle()
    started(ARRIVAL, handle, ttl=60_000)
    assert handle.schemas == {
        "entities": ("entity string", "value string, event_ms bigint, offset bigint", 60_000),
        "counts": ("value string", "count bigint", None),  # counts never expire
    }


def test_retraction_within_and_across_batches_in_arrival_order() -> None:
    handle = Handle()
    letter = '{"error": "no field \'city\'"}'
    out = run(
        started(ARRIVAL, handle),
        frame(("e1", "x", 5, 0), ("e2", "x", 6, 1), ("e1", "y", 7, 2), dead=(3, "ZTM=", letter)),
    )
    assert out == [[["dlq", "ZTM=", letter]], [counted("x", 1), counted("y", 1)]]
    assert handle.states["entities"].values == {("e1",): ("y", 7, 2), ("e2",): ("x", 6, 1)}
    assert handle.states["counts"].values == {("x",): (1,), ("y",): (1,)}

    # A restart: e2 deleted, e3 arrives. x back to 0 is emitted and leaves the state; the
    # deleted entity is forgotten (nothing older can arrive later in arrival order).
    out = run(started(ARRIVAL, handle), frame(("e2", None, 8, 4), ("e3", "y", 9, 5)))
    assert out == [[counted("x", 0), counted("y", 2)]]
    assert handle.states["entities"].values == {("e1",): ("y", 7, 2), ("e3",): ("y", 9, 5)}
    assert handle.states["counts"].values == {("y",): (2,)}


def test_a_batch_that_changes_no_count_emits_nothing() -> None:
    handle = Handle()
    run(started(ARRIVAL, handle), frame(("e1", "x", 1, 0)))
    # x -> y -> x within one batch: net zero for both values.
    out = run(started(ARRIVAL, handle), frame(("e1", "y", 2, 1), ("e1", "x", 3, 2)))
    assert out == []
    assert handle.states["counts"].values == {("x",): (1,)}
    assert handle.states["entities"].values == {("e1",): ("x", 3, 2)}


def test_event_time_order_keeps_a_deletion_so_an_older_record_cannot_revive_it() -> None:
    handle = Handle()
    run(started(EVENT_TIME, handle), frame(("e1", "x", 10, 0)))
    out = run(started(EVENT_TIME, handle), frame(("e1", None, 20, 1)))
    assert out == [[counted("x", 0)]]
    assert handle.states["entities"].values == {("e1",): (None, 20, 1)}  # the marker
    assert handle.states["counts"].values == {}
    # Older than the deletion (arrives later): ignored, in a later batch as in the same one.
    assert run(started(EVENT_TIME, handle), frame(("e1", "y", 15, 2))) == []
    assert handle.states["entities"].values == {("e1",): (None, 20, 1)}
    out = run(started(EVENT_TIME, handle), frame(("e1", "y", 25, 3), ("e1", "z", 21, 4)))
    assert out == [[counted("y", 1)]]


def test_a_deletion_of_an_unknown_entity_changes_nothing() -> None:
    handle = Handle()
    assert run(started(ARRIVAL, handle), frame(("e9", None, 1, 0))) == []
    assert handle.states["entities"].values == {}


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(table_count, "start_output", lambda *args: calls.append(args))
    monkeypatch.setattr(table_count.source, "read_source", lambda _spark, _settings, o: o)
    monkeypatch.setattr(table_count, "processed_rows", lambda *args: calls.append(args))
    return calls


@pytest.mark.parametrize(("ttl", "time_mode"), [(None, "None"), (3_600_000, "ProcessingTime")])
def test_a_state_ttl_needs_processing_time(ttl: int | None, time_mode: str, captured) -> None:
    config = TableCountConfig(source=SourceOptions("m"), output_topic="o", state_ttl_ms=ttl)
    table_count.table_count_output("spark", "settings", config)
    ((parsed, processor, mode, passed, group_column),) = captured
    assert parsed == SourceOptions("m")  # tombstones kept: they are deletions here
    assert (processor.order, processor.state_ttl_ms) == (ARRIVAL, ttl)
    assert (mode, passed, group_column) == (time_mode, config, "group")


def test_the_checkpoint_identity_is_the_order(captured) -> None:
    config = TableCountConfig(source=SourceOptions("m"), output_topic="o", order=EVENT_TIME)
    table_count.start_table_count("spark", "settings", config)
    assert captured == [
        ("spark", "settings", config, table_count.table_count_output, {"order": "event-time"})
    ]
