"""Per-batch progress of streaming queries as JSON lines, for the UI page and benchmarks.

A ``StreamingQueryListener`` appends one line per micro-batch to
``var_dir/progress/<query name>.jsonl``: rows in and rates, batch duration, state rows and
memory, and per source the offsets and how far behind the latest offset it is. An idle query
(no new data, so no batch) reports its heartbeat instead, in ``<query name>.idle``: the time
of its newest idle event, so a watcher can tell an idle stream from a stuck one.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

from boardstream.logs import progress_logger

logger = progress_logger("batches")


def summarize(progress: dict[str, Any]) -> dict[str, Any]:
    """The fields boardstream reads from a ``StreamingQueryProgress`` JSON."""
    sources = progress.get("sources", [])
    lag = [
        int(float(source.get("metrics", {}).get("maxOffsetsBehindLatest", 0) or 0))
        for source in sources
    ]
    return {
        "query": progress.get("name"),
        "run_id": progress.get("runId"),
        "batch_id": progress.get("batchId"),
        "timestamp": progress.get("timestamp"),
        "input_rows": progress.get("numInputRows", 0),
        "input_rows_per_s": progress.get("inputRowsPerSecond", 0.0),
        "processed_rows_per_s": progress.get("processedRowsPerSecond", 0.0),
        "batch_duration_ms": progress.get("batchDuration")
        or progress.get("durationMs", {}).get("triggerExecution", 0),
        "state_rows": sum(op.get("numRowsTotal", 0) for op in progress.get("stateOperators", [])),
        "state_memory_bytes": sum(
            op.get("memoryUsedBytes", 0) for op in progress.get("stateOperators", [])
        ),
        # RocksDB keeps state off-heap, so memoryUsedBytes says little; its SST files say more.
        "state_sst_bytes": sum(
            op.get("customMetrics", {}).get("rocksdbSstFileSize", 0)
            for op in progress.get("stateOperators", [])
        ),
        "max_offsets_behind_latest": max(lag, default=0),
        # Where a batch's time goes (Spark's phases: latestOffset, queryPlanning, addBatch,
        # walCommit, commitOffsets, triggerExecution) and the state operators' own part of it.
        "durations_ms": progress.get("durationMs", {}),
        "state_times_ms": [
            {
                "operator": op.get("operatorName"),
                **{k: op.get(k, 0) for k in ("allUpdatesTimeMs", "allRemovalsTimeMs")},
                "commitTimeMs": op.get("commitTimeMs", 0),
            }
            for op in progress.get("stateOperators", [])
        ],
        "sources": [
            {k: source.get(k) for k in ("description", "startOffset", "endOffset", "latestOffset")}
            for source in sources
        ],
    }


def progress_line(record: dict[str, Any]) -> str:
    """One human line per batch, for the job's log (and so an Airflow task log)."""
    return (
        f"{record['query']} batch {record['batch_id']}: {record['input_rows']:,} rows, "
        f"{record['processed_rows_per_s']:,.0f} rows/s, {record['batch_duration_ms']:,} ms, "
        f"state {record['state_rows']:,} rows, {record['max_offsets_behind_latest']:,} behind"
    )


def _epoch_ms(timestamp: str) -> int:
    return int(datetime.fromisoformat(timestamp).timestamp() * 1000)


class JsonlProgressListener(StreamingQueryListener):
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.last_batch: dict[str, int] = {}  # run id → last batch written
        self.names: dict[str, str] = {}  # query id → name (idle events carry no name)
        directory.mkdir(parents=True, exist_ok=True)

    def onQueryStarted(self, event: Any) -> None:
        self.names[str(event.id)] = event.name or "unnamed"

    def onQueryProgress(self, event: Any) -> None:
        record = summarize(json.loads(event.progress.json))
        name = record["query"] or "unnamed"
        with (self.directory / f"{name}.jsonl").open("a") as out:
            out.write(json.dumps(record) + "\n")
        logger.info("%s", progress_line(record))
        self.last_batch[str(record["run_id"])] = record["batch_id"]

    def wait_for(self, run_id: str, batch_id: int, timeout_s: float = 10.0) -> None:
        """Events reach Python asynchronously: wait until ``batch_id`` of ``run_id`` is written
        (a query's last batch would otherwise be lost when the job exits right away)."""
        deadline = time.monotonic() + timeout_s
        while self.last_batch.get(run_id, -1) < batch_id and time.monotonic() < deadline:
            time.sleep(0.05)

    def onQueryIdle(self, event: Any) -> None:
        name = self.names.get(str(event.id))
        if name is not None:
            staged = self.directory / f"{name}.idle.tmp"
            staged.write_text(str(_epoch_ms(event.timestamp)))
            staged.replace(self.directory / f"{name}.idle")

    def onQueryTerminated(self, event: Any) -> None:
        pass


def read_idle(directory: Path, query: str) -> int | None:
    """When ``query`` last reported itself idle (epoch ms), or None."""
    path = directory / f"{query}.idle"
    return int(path.read_text()) if path.exists() else None


TAIL_CHUNK = 64 * 1024  # bytes read at a time from a progress file's end


def read_progress(directory: Path, query: str, last: int | None = None) -> list[dict[str, Any]]:
    """The query's batches in order; only the ``last`` ones if given, read from the file's end:
    a live stream's file only grows (a line a batch), and its watch reads it every few seconds."""
    path = directory / f"{query}.jsonl"
    if not path.exists():
        return []
    if last is None:
        with path.open() as lines:
            return [json.loads(line) for line in lines if line.strip()]
    return [json.loads(line) for line in _last_lines(path, last)]


def _last_lines(path: Path, count: int) -> list[str]:
    """The last ``count`` non-blank lines of ``path``, reading backwards a chunk at a time (a
    line still being written, with no newline yet, is left out)."""
    with path.open("rb") as handle:
        end = handle.seek(0, 2)
        position, lines = end, []
        while position > 0 and len(lines) < count:
            position = max(0, position - TAIL_CHUNK)
            handle.seek(position)
            data = handle.read(end - position)
            complete = data[: data.rfind(b"\n") + 1].split(b"\n")
            # Unless the file's start is read, the first piece may be a line's cut-off end.
            lines = [line for line in complete[(position > 0) :] if line.strip()]
    return [line.decode() for line in lines[-count:]]
