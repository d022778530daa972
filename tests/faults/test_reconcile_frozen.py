"""A full reconciliation frozen (SIGSTOP of its whole process group: a swap storm, a long pause)
after its checks and before it stores them, past its lease and its heartbeat; meanwhile a row
is altered and the next run closes the frozen one as interrupted and fails on the row. Resumed,
the frozen run must write nothing (#63): before, it stored its older facts and its ledger over
the next run's, recorded the altered row as checked, and later incremental runs passed.

Its store, its facts, its cursor and its verdict are one transaction written only while its run
is open and its lease held (``RUNS.hold_open``, ``Leases.fence``); the mutant
``store-unfenced`` (tests/faults/mutants.py) takes both away, and this test fails on it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import sqlalchemy as sa

from boardstream.failpoints import ENV as FAILPOINTS
from boardstream.generator.plan import GeneratorOptions
from tests.faults.harness import JOIN_ARGS, LEASE_TTL_S, SINK_ARGS, Scenario
from tests.pipeline import query
from tests.store import FACTS, LEDGER, RUNS, WATCH

SEED = 20261201
HEARTBEAT_TIMEOUT_S = "5"  # a run silent for 5 s is dead


def ledger_rows(url: str) -> dict[str, list[tuple]]:
    """Every row of every table the reconciliation keeps, in a fixed order."""
    engine = sa.create_engine(url)
    tables = [
        table
        for metadata in (
            LEDGER.metadata,
            FACTS.metadata,
            WATCH.metadata,
            RUNS.metadata,
        )
        for table in metadata.sorted_tables
    ]
    with engine.connect() as connection:
        found = {
            table.name: sorted(
                connection.execute(sa.select(table)).all(), key=lambda row: repr(tuple(row))
            )
            for table in tables
        }
    engine.dispose()
    return found


def stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] == "T"


def test_a_full_run_frozen_past_its_lease_then_resumed_writes_nothing(
    services, tmp_path: Path
) -> None:
    s = Scenario(
        "reconcile frozen, then resumed", services.settings, services.database_url, tmp_path, SEED
    )
    s.produce(GeneratorOptions(members=40, boards=60, seed=SEED))
    s.run_to_end("board-detail-join", JOIN_ARGS)
    s.run_to_end("board-detail-sink", SINK_ARGS)
    baseline = s.reconcile("--full")
    assert baseline.returncode == 0, baseline.stdout[-3000:] + baseline.stderr[-3000:]

    beats = {"BOARDSTREAM_RECONCILE_HEARTBEAT_TIMEOUT_S": HEARTBEAT_TIMEOUT_S}
    frozen = subprocess.Popen(
        [sys.executable, "-m", "boardstream.entrypoints.cli", *s.reconcile_command("--full")],
        env=s.env(**{FAILPOINTS: "reconcile.before_store@1:stop"}, **beats),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not stopped(frozen.pid):
            assert frozen.poll() is None and time.monotonic() < deadline, frozen.communicate()
            time.sleep(0.2)
        (altered,) = query(s.database_url, "select min(board_id) from board_detail")[0]
        engine = sa.create_engine(s.database_url)
        with engine.begin() as connection:
            connection.execute(
                sa.text("update board_detail set city = 'altered' where board_id = :b"),
                {"b": altered},
            )
        engine.dispose()
        time.sleep(LEASE_TTL_S + 1)  # its lease and its heartbeat run out

        successor = s.reconcile("--full", **beats)
        out = successor.stdout + successor.stderr
        assert successor.returncode == 1, out[-3000:]  # FAILED: the altered row
        assert "closed as ERRORED: interrupted" in out and altered in out, out[-3000:]
        before = ledger_rows(s.database_url)
    finally:
        os.killpg(frozen.pid, signal.SIGCONT)
    said = "".join(frozen.communicate(timeout=300))
    assert frozen.returncode == 2, said[-3000:]
    assert "verdict not recorded: another run closed it" in said, said[-3000:]
    assert ledger_rows(s.database_url) == before

    # The altered row stays found: an incremental run fails on it too.
    after = s.reconcile()
    assert after.returncode == 1 and altered in after.stdout, after.stdout[-3000:]
