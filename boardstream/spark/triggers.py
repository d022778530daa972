"""The triggers a boardstream query runs under, by name: a module of its own so that DAG files
can offer them as params without importing Spark at parse time."""

AVAILABLE_NOW, PROCESSING_TIME, REAL_TIME = "available-now", "processing-time", "real-time"
TRIGGERS = (AVAILABLE_NOW, PROCESSING_TIME)
# Spark's real-time mode: long-running tasks, records flow through without waiting for a batch
# boundary, and ``interval`` is how often progress is checkpointed (at least 5 s). It runs
# only queries of its allowlisted operators (the join's), in update mode, with a task slot per
# source and shuffle partition at once.
REAL_TIME_TRIGGERS = (*TRIGGERS, REAL_TIME)
# A live stream's micro-batch interval (the join's and the sink's): a board passes both, and at
# 1 s each its p95 from board to row was 5.2 s at 1,000 boards/s, at 500 ms 4.8 s
# (docs/BENCHMARKS.md); an idle join runs an empty batch (its timers) each interval.
LIVE_INTERVAL = "500 milliseconds"
