"""The session-count and window-count processor, driven by hand without Spark: each batch loads
the state a previous batch (or run) saved, emits results keyed ``group@start`` and too-late
events as dead letters that say where they came from, and saves the windows and the clock back.
Also what a job's config means: its query name, its aggregation, its checkpoint identity."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from boardstream.aggregations import event_time_job
from boardstream.aggregations.event_time import Sessions, SessionSpec, Windows, WindowSpec
from boardstream.aggregations.event_time_job import EventTimeConfig, EventTimeCount
from boardstream.aggregations.source import SourceOptions


class ValueState:
    def __init__(self) -> None:
        self.value: Any = None

    def get(self) -> Any:
        return self.value

    def update(self, value: Any) -> None:
        self.value = value

    def clear(self) -> None:
        self.value = None


class Handle:
    """The states a processor asks for, by name, with the schema it gave."""

    def __init__(self) -> None:
        self.states: dict[str, ValueState] = {}
        self.schemas: dict[str, str] = {}

    def getValueState(self, name: str, schema: str) -> ValueState:  # Spark's name
        self.schemas[name] = schema
        return self.states.setdefault(name, ValueState())


def frame(*rows: tuple[str, int, int, int], dead: tuple[int, int, str, str] | None = None):
    """One input frame: (attribute, event_ms, partition, offset) rows, and optionally one invalid
    record (partition, offset, dead key, dead letter)."""
    records = [
        {
            "entity": "e",
            "attribute": attribute,
            "event_ms": event_ms,
            "partition": partition,
            "offset": offset,
            "dead_key": None,
            "dead_letter": None,
        }
        for attribute, event_ms, partition, offset in rows
    ]
    if dead is not None:
        partition, offset, key, letter = dead
        records.append(
            {
                "entity": None,
                "attribute": None,
                "event_ms": 0,
                "partition": partition,
                "offset": offset,
                "dead_key": key,
                "dead_letter": letter,
            }
        )
    return pd.DataFrame(records)


def run(processor: EventTimeCount, *frames: pd.DataFrame) -> list[list[list[Any]]]:
    return [out.values.tolist() for out in processor.handleInputRows(0, iter(frames), None)]


def config(spec: WindowSpec | SessionSpec, group_by: str = "value") -> EventTimeConfig:
    job = "window-count" if isinstance(spec, WindowSpec) else "session-count"
    return EventTimeConfig(
        job=job,
        source=SourceOptions("board", value_field="city", max_offsets_per_trigger=100),
        output_topic="board-by-city",
        spec=spec,
        group_by=group_by,
    )


WINDOWS = WindowSpec(size_ms=10, grace_ms=0, retention_ms=20)
SESSIONS = SessionSpec(gap_ms=10, grace_ms=0, retention_ms=10)


def started(spec: WindowSpec | SessionSpec, handle: Handle) -> EventTimeCount:
    processor = EventTimeCount(config(spec).aggregation, "board")
    processor.init(handle)
    return processor


def test_the_config_names_its_query_and_makes_its_aggregation() -> None:
    windows = config(WINDOWS)
    assert windows.query_name == "window-count-board-by-city"
    made = windows.aggregation()
    assert type(made) is Windows and made.spec == WINDOWS
    assert made is not windows.aggregation()  # a fresh one per batch
    sessions = config(SESSIONS)
    assert sessions.query_name == "session-count-board-by-city"
    assert type(sessions.aggregation()) is Sessions
    assert sessions.aggregation().spec == SESSIONS


def test_state_schemas_are_the_aggregations_columns_as_arrays() -> None:
    handle = Handle()
    assert started(WINDOWS, handle).kind == "window"
    assert handle.schemas == {
        "aggregates": (
            "`group` array<string>, `start_ms` array<bigint>, `count` array<bigint>, "
            "`closed` array<boolean>"
        ),
        "clock": "partition array<int>, partition_ms array<bigint>, stream_ms bigint, late bigint",
    }
    handle = Handle()
    assert started(SESSIONS, handle).kind == "session"
    assert handle.schemas["aggregates"] == (
        "`group` array<string>, `start_ms` array<bigint>, `end_ms` array<bigint>, "
        "`count` array<bigint>, `closed` array<boolean>"
    )


def test_windows_across_two_runs_with_a_dead_letter_and_a_late_event() -> None:
    handle = Handle()
    letter = '{"error": "not a JSON object"}'
    # Out of arrival order on purpose: the batch is sorted by partition and offset.
    first = run(
        started(WINDOWS, handle),
        frame(("a", 12, 0, 1)),
        frame(("a", 1, 0, 0), dead=(0, 2, "a2V5", letter)),
    )
    assert first == [
        [["dlq", "a2V5", letter]],
        [
            [
                "output",
                "a@0",
                '{"group": "a", "window_start": 0, "window_end": 10, "count": 1, "final": true}',
            ]
        ],
    ]
    assert handle.states["aggregates"].value == (["a", "a"], [0, 10], [1, 1], [True, False])
    assert handle.states["clock"].value == ([0], [12], 12, 0)

    # A new processor (a restart) on the same state: [10,20) keeps its count from run one.
    second = run(started(WINDOWS, handle), frame(("a", 5, 0, 3), ("a", 31, 0, 4)))
    late = {
        "error": "too late: event time 5 ms, its window had closed at stream time 12 ms",
        "source_topic": "board",
        "partition": 0,
        "offset": 3,
        "group": "a",
        "event_ms": 5,
    }
    assert second == [
        [
            [
                "output",
                "a@10",
                '{"group": "a", "window_start": 10, "window_end": 20, "count": 1, "final": true}',
            ],
            ["dlq", "YQ==", json.dumps(late)],  # the group, base64 as a dead key is
        ]
    ]
    assert handle.states["aggregates"].value == (["a"], [30], [1], [False])
    assert handle.states["clock"].value == ([0], [31], 31, 1)


def test_sessions_say_session_in_results_and_dead_letters() -> None:
    handle = Handle()
    out = run(started(SESSIONS, handle), frame(("m", 0, 1, 0), ("m", 25, 1, 1), ("m", 3, 1, 2)))
    ((result, late),) = out
    assert result == [
        "output",
        "m@0",
        '{"group": "m", "session_start": 0, "session_end": 0, "count": 1, "final": true}',
    ]
    assert late[:2] == ["dlq", "bQ=="]
    assert json.loads(late[2])["error"] == (
        "too late: event time 3 ms, its session had closed at stream time 25 ms"
    )


def test_state_emptied_by_retention_is_cleared_and_nothing_is_emitted() -> None:
    handle = Handle()
    handle.states["aggregates"] = ValueState()
    handle.states["aggregates"].value = (["a"], [0], [2], [True])
    handle.states["clock"] = ValueState()
    handle.states["clock"].value = ([0], [100], 100, 4)
    letter = '{"error": "record has no key"}'
    # Only a dead letter: the old window is past its retention and goes.
    out = run(started(WINDOWS, handle), frame(dead=(0, 9, "", letter)))
    assert out == [[["dlq", "", letter]]]
    assert handle.states["aggregates"].value is None
    assert handle.states["clock"].value == ([0], [100], 100, 4)


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(event_time_job, "start_output", lambda *args: calls.append(args))
    monkeypatch.setattr(
        event_time_job.source, "read_source", lambda _spark, _settings, options: options
    )
    monkeypatch.setattr(event_time_job, "processed_rows", lambda *args: calls.append(args))
    return calls


def test_the_checkpoint_identity_names_the_grouping_and_the_spec(captured) -> None:
    chosen = config(SessionSpec(gap_ms=60_000, grace_ms=1_000, retention_ms=61_000), "key")
    event_time_job.start_event_time_count("spark", "settings", chosen)
    ((spark, settings, passed, rows, identity),) = captured
    assert (spark, settings, passed, rows) == (
        "spark",
        "settings",
        chosen,
        event_time_job.event_time_output,
    )
    assert identity == {
        "group_by": "key",
        "spec": {
            "kind": "SessionSpec",
            "gap_ms": 60_000,
            "grace_ms": 1_000,
            "retention_ms": 61_000,
        },
    }


def test_grouping_by_value_refuses_tombstones(captured) -> None:
    """A null value has nothing to be counted under: with ``group_by=value`` the source treats
    tombstones as errors (dead letters)."""
    chosen = config(WINDOWS)
    event_time_job.event_time_output("spark", "settings", chosen)
    ((parsed, processor, time_mode, passed, group_column),) = captured
    assert parsed == SourceOptions(
        "board", value_field="city", max_offsets_per_trigger=100, tombstones=False
    )
    assert chosen.source.tombstones is True  # the config itself is left as it was
    assert (processor.kind, processor.source_topic) == ("window", "board")
    assert (time_mode, passed, group_column) == ("None", chosen, "clock")
