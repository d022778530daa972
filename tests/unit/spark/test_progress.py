"""The fields boardstream keeps from Spark's StreamingQueryProgress JSON."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from boardstream.spark import progress
from boardstream.spark.progress import ProgressListener, progress_line, summarize
from boardstream.stream_progress import ProgressStore

PROGRESS = {
    "id": "q",
    "runId": "r",
    "name": "board-detail-join",
    "timestamp": "2026-11-22T08:24:41.000Z",
    "batchId": 4,
    "batchDuration": 2100,
    "numInputRows": 910,
    "inputRowsPerSecond": 450.5,
    "processedRowsPerSecond": 43.4,
    "durationMs": {"triggerExecution": 2100, "addBatch": 1900},
    "stateOperators": [
        {
            "operatorName": "transformWithStateExec",
            "allUpdatesTimeMs": 700,
            "commitTimeMs": 300,
            "numRowsTotal": 208,
            "memoryUsedBytes": 73756,
            "customMetrics": {"rocksdbSstFileSize": 5000},
        }
    ],
    "sources": [
        {
            "description": "KafkaV2[Subscribe[member,board]]",
            "startOffset": {"board": {"0": 0}},
            "endOffset": {"board": {"0": 69}},
            "latestOffset": {"board": {"0": 80}},
            "metrics": {"maxOffsetsBehindLatest": "11", "avgOffsetsBehindLatest": "5.5"},
        }
    ],
}


def test_summary_keeps_rates_state_and_lag() -> None:
    summary = summarize(PROGRESS)
    assert summary["query"] == "board-detail-join"
    assert (summary["batch_id"], summary["input_rows"], summary["batch_duration_ms"]) == (
        4,
        910,
        2100,
    )
    assert (summary["state_rows"], summary["state_memory_bytes"], summary["state_sst_bytes"]) == (
        208,
        73756,
        5000,
    )
    assert summary["max_offsets_behind_latest"] == 11
    assert summary["sources"][0]["endOffset"] == {"board": {"0": 69}}


def test_summary_says_where_the_batch_time_went() -> None:
    summary = summarize(PROGRESS)
    assert summary["durations_ms"] == {"triggerExecution": 2100, "addBatch": 1900}
    assert summary["state_times_ms"] == [
        {
            "operator": "transformWithStateExec",
            "allUpdatesTimeMs": 700,
            "allRemovalsTimeMs": 0,
            "commitTimeMs": 300,
        }
    ]


def test_summary_of_a_stateless_idle_batch() -> None:
    summary = summarize(
        {"name": "s", "batchId": 0, "numInputRows": 0, "durationMs": {"triggerExecution": 7}}
    )
    assert (
        summary["state_rows"],
        summary["max_offsets_behind_latest"],
        summary["batch_duration_ms"],
    ) == (0, 0, 7)


def test_progress_line_reads_as_a_log_line() -> None:
    assert progress_line(summarize(PROGRESS)) == (
        "board-detail-join batch 4: 910 rows, 43 rows/s, 2,100 ms, state 208 rows, 11 behind"
    )


def store(tmp_path: Path) -> ProgressStore:
    return ProgressStore(f"sqlite:///{tmp_path / 'progress.db'}")


def test_idle_events_leave_the_querys_heartbeat(tmp_path: Path) -> None:
    """Spark's idle event names no query: the listener knows it from the query's start."""
    progress_store = store(tmp_path)
    listener = ProgressListener(progress_store)
    assert progress_store.idle_since("board-detail-sink") is None
    listener.onQueryIdle(SimpleNamespace(id="q1", timestamp="2026-11-25T10:00:00.000Z"))
    assert progress_store.idle_since("board-detail-sink") is None  # not started by this listener
    listener.onQueryStarted(SimpleNamespace(id="q1", name="board-detail-sink"))
    listener.onQueryIdle(SimpleNamespace(id="q1", timestamp="2026-11-25T10:00:00.000Z"))
    listener.onQueryIdle(SimpleNamespace(id="q1", timestamp="2026-11-25T10:00:10.500Z"))
    assert progress_store.idle_since("board-detail-sink") == 1_795_600_810_500
    assert progress_store.queries() == []  # a heartbeat is not a batch


def batch(batch_id: int, query: str = "board-detail-join") -> SimpleNamespace:
    event = {**PROGRESS, "name": query, "batchId": batch_id}
    return SimpleNamespace(progress=SimpleNamespace(json=json.dumps(event)))


def test_batches_are_read_newest_last_and_the_last_ones_alone(tmp_path: Path) -> None:
    listener = ProgressListener(store(tmp_path))
    for batch_id in [*range(40), 0, 1]:  # a new checkpoint numbers its batches from 0 again
        listener.onQueryProgress(batch(batch_id))
    listener.onQueryProgress(batch(7, "board-detail-sink"))
    progress_store = store(tmp_path)  # another process reads what this one stored
    join = "board-detail-join"
    assert [r["batch_id"] for r in progress_store.read(join, last=3)] == [39, 0, 1]
    assert [r["batch_id"] for r in progress_store.read(join, last=1)] == [1]
    assert len(progress_store.read(join)) == 42
    assert progress_store.read(join, last=1)[0] == summarize({**PROGRESS, "batchId": 1})
    assert progress_store.read("missing", last=1) == []
    assert progress_store.queries() == ["board-detail-join", "board-detail-sink"]


def test_batches_wait_for_a_database_that_is_away(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The stream goes on while its progress cannot be stored; the summaries go with the next
    batch once the database is back, in order, none lost, none twice."""
    away = tmp_path / "progress.db"
    away.mkdir()  # where the database file should be: it cannot be opened
    listener = ProgressListener(ProgressStore(f"sqlite:///{away}"))
    with caplog.at_level(logging.WARNING):
        listener.onQueryProgress(batch(0))
        listener.onQueryProgress(batch(1))
    assert len(listener.unsent) == 2
    assert "board-detail-join batch 1: progress not stored yet (2 waiting, 0 dropped)" in (
        caplog.text
    )
    away.rmdir()  # the database can be opened again
    listener.onQueryProgress(batch(2))
    assert listener.unsent == []
    assert [r["batch_id"] for r in listener.store.read("board-detail-join")] == [0, 1, 2]
    assert listener.last_batch == {"r": 2}


def test_the_oldest_waiting_batches_are_dropped_beyond_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(progress, "UNSENT_LIMIT", 2)
    away = tmp_path / "progress.db"
    away.mkdir()  # where the database file should be: it cannot be opened
    listener = ProgressListener(ProgressStore(f"sqlite:///{away}"))
    with caplog.at_level(logging.WARNING):
        for batch_id in range(4):
            listener.onQueryProgress(batch(batch_id))
    assert "batch 3: progress not stored yet (2 waiting, 2 dropped)" in caplog.text
    away.rmdir()
    listener.onQueryProgress(batch(4))
    assert [r["batch_id"] for r in listener.store.read("board-detail-join")] == [3, 4]
