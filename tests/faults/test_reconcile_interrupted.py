"""Never half-written, whatever dies: `boardstream reconcile` killed with SIGKILL mid-run, then
another cut off from PostgreSQL mid-run (the server stopped), then a run once it is back. The
killed run records nothing more; the cut-off one exits 2 with one line; the last closes what
they left open as ERRORED, interrupted, and says so; the health page shows them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy.exc import ProgrammingError

from boardstream.entrypoints.health import pipeline_health
from boardstream.generator.plan import GeneratorOptions
from tests.faults.harness import JOIN_ARGS, SINK_ARGS, Scenario, record
from tests.pipeline import query

# Minutes of a pipeline, two killed runs and a third: CI keeps the in-process SQLite form
# (tests/integration/test_reconcile_interrupted.py).
pytestmark = pytest.mark.long

SEED = 20261129
HEARTBEAT_TIMEOUT_S = 10  # a beat every 0.5 s; a run silent for 10 s is dead


def reconcile(s: Scenario) -> subprocess.Popen:
    """`boardstream reconcile --full` on the scenario's checkpoints, in a process group of its
    own (the CLI, spark-submit, the driver: killed together as a host's power cut would)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "boardstream.entrypoints.cli",
            "reconcile",
            "--full",
            f"--join-checkpoint={s.settings.checkpoint('board-detail-join')}",
            f"--sink-checkpoint={s.settings.checkpoint('board-detail-sink')}",
        ],
        env=s.env(BOARDSTREAM_RECONCILE_HEARTBEAT_TIMEOUT_S=str(HEARTBEAT_TIMEOUT_S)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def await_open_run(s: Scenario, process: subprocess.Popen, after: int = 0) -> int:
    """The id of the run ``process`` has under way (recorded, not ended) once its heartbeat has
    beaten at least once."""
    deadline = time.monotonic() + 600
    while True:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no run under way"
        try:
            rows = query(
                s.database_url,
                "select run_id from board_detail_reconciliation_run where status is null and "
                f"run_id > {after} and heartbeat_at > started_at",
            )
        except ProgrammingError:  # the ledger is created by the run itself
            rows = []
        if rows:
            return rows[0][0]
        time.sleep(0.1)


def status(s: Scenario, run_id: int) -> tuple[str | None, str | None]:
    (row,) = query(
        s.database_url,
        f"select status, error from board_detail_reconciliation_run where run_id = {run_id}",
    )
    return row[0], row[1]


def test_reconcile_killed_or_cut_off_mid_run_is_closed_by_the_next_run(
    services, tmp_path: Path
) -> None:
    s = Scenario("reconcile interrupted", services.settings, services.database_url, tmp_path, SEED)
    s.produce(GeneratorOptions(members=60, boards=120, seed=SEED))
    s.run_to_end("board-detail-join", JOIN_ARGS)
    s.run_to_end("board-detail-sink", SINK_ARGS)

    killed_process = reconcile(s)
    killed = await_open_run(s, killed_process)
    os.killpg(killed_process.pid, signal.SIGKILL)
    killed_process.communicate()
    assert status(s, killed) == (None, None)  # nothing could record its end

    cut_process = reconcile(s)
    cut = await_open_run(s, cut_process, after=killed)
    services.postgres.process.stop()
    stopped = time.monotonic()
    stdout, stderr = cut_process.communicate(timeout=600)
    cut_exit_s = time.monotonic() - stopped
    output = stdout + stderr  # spark-submit passes its Python driver's stderr on as stdout
    assert cut_process.returncode == 2, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    # One line of its own, among the driver's log lines and Spark's JVM's.
    lines = [line for line in output.splitlines() if line.startswith("reconcile: error:")]
    assert len(lines) == 1, output[-6000:]
    (line,) = lines
    assert line.startswith(f"reconcile: error: reconciliation run {cut}: could not record "), line
    assert line.endswith("the next run closes it as interrupted"), line
    print(line)
    services.restart_postgres()

    time.sleep(HEARTBEAT_TIMEOUT_S)  # the killed run's bound may not have passed yet
    began = time.monotonic()
    after = reconcile(s)
    stdout, stderr = after.communicate(timeout=600)
    assert after.returncode == 0, stdout[-3000:] + stderr[-3000:]
    (next_run,) = query(s.database_url, "select max(run_id) from board_detail_reconciliation_run")[
        0
    ]
    for dead in (killed, cut):
        dead_status, error = status(s, dead)
        assert dead_status == "ERRORED", (dead, dead_status, error)
        assert error.startswith("interrupted: found open by run "), error
    # The cut-off run died after the killed one was looked for: the last run closed it.
    assert f"  run {cut} closed as ERRORED: interrupted: found open by run {next_run} at" in stdout

    shown = {r["run_id"]: r for r in pipeline_health(s.settings)["reconciliation_runs"]}
    for dead in (killed, cut):
        assert shown[dead]["status"] == "ERRORED"
        assert shown[dead]["error"].startswith("interrupted: found open by run ")
    record(
        scenario=s.name,
        seed=SEED,
        records_in=s.records_in,
        faults=2,
        cut_off_exit_s=round(cut_exit_s, 1),
        next_run_s=round(time.monotonic() - began, 1),
        reconciliation="PASSED",
    )
