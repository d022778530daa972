"""Per-batch progress of streaming queries, for the health page, the watch and benchmarks.

A ``StreamingQueryListener`` stores one summary per micro-batch in the database's progress
store (:mod:`boardstream.stream_progress`, which every host reads): rows in and rates, batch
duration, state rows and memory, and per source the offsets and how far behind the latest
offset it is. An idle query (no new data, so no batch) reports its heartbeat instead, so a
watcher can tell an idle stream from a stuck one.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener
from sqlalchemy.exc import SQLAlchemyError

from boardstream.database import driver_said
from boardstream.logs import progress_logger
from boardstream.stream_progress import ProgressStore

logger = progress_logger("batches")  # the progress lines, printed as written
problems = logging.getLogger(__name__)  # what went wrong storing them


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


UNSENT_LIMIT = 10_000  # batches held while the database is away (about 1.4 h at 2 a second)


class ProgressListener(StreamingQueryListener):
    """Each batch's summary into the progress store (:mod:`boardstream.stream_progress`), and
    each idle heartbeat. A database that is away must not stop the stream: the summaries wait
    (up to :data:`UNSENT_LIMIT`, the oldest dropped beyond it, with a warning) and go with the
    next batch's."""

    def __init__(self, store: ProgressStore) -> None:
        self.store = store
        self.unsent: list[dict[str, Any]] = []
        self.dropped = 0
        self.last_batch: dict[str, int] = {}  # run id → last batch stored
        self.names: dict[str, str] = {}  # query id → name (idle events carry no name)

    def onQueryStarted(self, event: Any) -> None:
        self.names[str(event.id)] = event.name or "unnamed"

    def onQueryProgress(self, event: Any) -> None:
        record = summarize(json.loads(event.progress.json))
        logger.info("%s", progress_line(record))
        self.unsent.append(record)
        if len(self.unsent) > UNSENT_LIMIT:
            self.dropped += len(self.unsent) - UNSENT_LIMIT
            del self.unsent[: len(self.unsent) - UNSENT_LIMIT]
        try:
            self.store.append(self.unsent)
        except SQLAlchemyError as error:
            problems.warning(
                "%s batch %s: progress not stored yet (%d waiting, %d dropped): %s",
                record["query"],
                record["batch_id"],
                len(self.unsent),
                self.dropped,
                driver_said(error),
            )
            return
        for sent in self.unsent:
            self.last_batch[str(sent["run_id"])] = sent["batch_id"]
        self.unsent = []

    def wait_for(self, run_id: str, batch_id: int, timeout_s: float = 10.0) -> None:
        """Events reach Python asynchronously: wait until ``batch_id`` of ``run_id`` is stored
        (a query's last batch would otherwise be lost when the job exits right away)."""
        deadline = time.monotonic() + timeout_s
        while self.last_batch.get(run_id, -1) < batch_id and time.monotonic() < deadline:
            time.sleep(0.05)

    def onQueryIdle(self, event: Any) -> None:
        name = self.names.get(str(event.id))
        if name is None:
            return
        try:
            self.store.mark_idle(name, _epoch_ms(event.timestamp))
        except SQLAlchemyError as error:
            problems.warning("%s: idle heartbeat not stored: %s", name, driver_said(error))

    def onQueryTerminated(self, event: Any) -> None:
        pass
