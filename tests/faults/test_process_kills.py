"""kill -9 the join and the sink at seeded random points of a backlog (once each, six times each
with BOARDSTREAM_FAULTS=full), and the sink once between its write and its offset commit (a
failpoint), then let them finish from their checkpoints: nothing lost, nothing duplicated,
reconciliation passes. For each shipped pipeline: board_detail, and orders from its declaration
(`--pipeline orders`, its own topics, table and store)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from boardstream.joins.topics import SHIPPED_PIPELINE
from boardstream.stream_progress import ProgressStore
from tests.faults.harness import FULL, JOIN_ARGS, SINK_ARGS, Scenario, backlog_options

SEED = 20261122  # the kill points derive from it: a failure replays with the same schedule
KILLS = 6 if FULL else 1  # the short form: each kind of kill once


@pytest.mark.parametrize("declared", [SHIPPED_PIPELINE, "orders"])
def test_kill_9_join_and_sink_mid_backlog(services, tmp_path: Path, declared: str) -> None:
    s = Scenario(
        "kill -9 join and sink mid-backlog"
        + ("" if declared == SHIPPED_PIPELINE else f" ({declared})"),
        services.settings,
        services.database_url,
        tmp_path,
        SEED,
        declared=declared,
    )
    s.produce()
    for kill in range(KILLS):
        s.kill_mid_run("board-detail-join", JOIN_ARGS)
        if kill == 0:  # once exactly where the upsert matters: rows written, offsets not
            s.kill_at("board-detail-sink", SINK_ARGS, "sink.after_write@1")
        s.kill_mid_run("board-detail-sink", SINK_ARGS)
    s.restarts = s.faults  # each killed job started again from its checkpoint
    began = time.monotonic()
    s.run_to_end("board-detail-join", JOIN_ARGS)
    s.run_to_end("board-detail-sink", SINK_ARGS)
    s.assert_nothing_lost(time.monotonic() - began)

    # Progress lines: rows, duration, state, lag. A batch completed just before a kill may
    # have no line (the listener writes after the batch), so they are not summed.
    join_progress = ProgressStore(s.settings.database).read(s.query("join"))
    # One state row per table key named so far (the JVM engine keys its state by the table's
    # key): every row of the backlog at the end, none more at any time.
    members = backlog_options(SEED).members
    assert join_progress[-1]["state_rows"] == members
    assert all(0 < p["state_rows"] <= members for p in join_progress)
    assert all(p["batch_duration_ms"] > 0 for p in join_progress)
    assert join_progress[-1]["max_offsets_behind_latest"] == 0
