"""The fields boardstream keeps from Spark's StreamingQueryProgress JSON."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from boardstream.spark import progress
from boardstream.spark.progress import JsonlProgressListener, progress_line, read_idle, summarize

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


def test_idle_events_leave_the_querys_heartbeat(tmp_path) -> None:
    """Spark's idle event names no query: the listener knows it from the query's start."""
    listener = JsonlProgressListener(tmp_path)
    assert read_idle(tmp_path, "board-detail-sink") is None
    listener.onQueryIdle(SimpleNamespace(id="q1", timestamp="2026-11-25T10:00:00.000Z"))
    assert read_idle(tmp_path, "board-detail-sink") is None  # not started by this listener
    listener.onQueryStarted(SimpleNamespace(id="q1", name="board-detail-sink"))
    listener.onQueryIdle(SimpleNamespace(id="q1", timestamp="2026-11-25T10:00:00.000Z"))
    listener.onQueryIdle(SimpleNamespace(id="q1", timestamp="2026-11-25T10:00:10.500Z"))
    assert read_idle(tmp_path, "board-detail-sink") == 1_795_600_810_500
    assert sorted(p.name for p in tmp_path.iterdir()) == ["board-detail-sink.idle"]


@pytest.mark.parametrize("chunk", [7, 64, 64 * 1024])
def test_the_last_batches_are_read_from_the_files_end(tmp_path, monkeypatch, chunk) -> None:
    """Whatever the chunk size: the newest lines, in order, a half-written last line left out."""
    monkeypatch.setattr(progress, "TAIL_CHUNK", chunk)
    lines = [json.dumps({"batch_id": i, "pad": "x" * (i % 5)}) for i in range(40)]
    (tmp_path / "q.jsonl").write_text("\n".join(lines) + "\n\n" + '{"batch_id": 4')
    assert [r["batch_id"] for r in progress.read_progress(tmp_path, "q", last=3)] == [37, 38, 39]
    assert [r["batch_id"] for r in progress.read_progress(tmp_path, "q", last=1)] == [39]
    assert len(progress.read_progress(tmp_path, "q", last=100)) == 40
    assert progress.read_progress(tmp_path, "missing", last=1) == []
