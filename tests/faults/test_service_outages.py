"""The broker and the database go away while the jobs run and come back: the jobs (restarted
by a supervisor when they exit, as Airflow's retries would) lose and duplicate nothing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from boardstream.generator.plan import Plan
from tests.faults.harness import JOIN_ARGS, SINK_ARGS, Scenario, Supervisor, backlog_options

# Minutes each of services stopped and started; CI keeps the kills (test_process_kills).
pytestmark = pytest.mark.long

SEED = 20261123
OUTAGE_S = 10.0


def test_broker_restart_while_jobs_run(services, tmp_path: Path) -> None:
    s = Scenario(
        "broker restart while jobs run", services.settings, services.database_url, tmp_path, SEED
    )
    options = backlog_options(SEED)
    half = Plan(options).size // 2
    s.produce(options, slice(0, half))
    jobs = Supervisor(s, {"board-detail-join": JOIN_ARGS, "board-detail-sink": SINK_ARGS})
    jobs.await_batches()
    services.broker.process.stop()
    s.faults += 1
    time.sleep(OUTAGE_S)
    back = time.monotonic()
    services.restart_broker()
    s.produce(options, slice(half, None))
    jobs.run_until(lambda: len(s.table_counts()) == len(s.boards))
    recovered = time.monotonic() - back
    jobs.stop()
    s.assert_nothing_lost(recovered, outage_s=OUTAGE_S)


def test_database_outage_while_the_sink_runs(services, tmp_path: Path) -> None:
    s = Scenario(
        "database outage while the sink runs",
        services.settings,
        services.database_url,
        tmp_path,
        SEED + 1,
    )
    s.produce()
    s.run_to_end("board-detail-join", JOIN_ARGS)
    jobs = Supervisor(s, {"board-detail-sink": ["--max-offsets-per-trigger", "300"]})
    jobs.await_batches()
    services.postgres.process.stop()
    s.faults += 1
    time.sleep(OUTAGE_S)
    back = time.monotonic()
    services.restart_postgres()
    jobs.run_until(lambda: len(s.table_counts()) == len(s.boards))
    recovered = time.monotonic() - back
    jobs.stop()
    s.assert_nothing_lost(recovered, outage_s=OUTAGE_S)
