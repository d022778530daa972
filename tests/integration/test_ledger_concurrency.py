"""Two reconciliations at once (#22), on real SQLite and PostgreSQL: the second waits for the
first's ledger transaction rather than interleaving with it, but not for a frozen one's past its
wait (PostgreSQL), and an incremental run whose snapshot a later run has already checked past is
refused, leaving the ledger as it was."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from boardstream import database
from boardstream.errors import BoardstreamError
from boardstream.reconcile.checks import spark_checks as checks
from boardstream.reconcile.incremental import inputs as incremental
from boardstream.reconcile.incremental.store import Store
from boardstream.reconcile.reads.snapshot import JobProgress, Snapshot
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import Settings
from tests.fixtures import new_database, sqlite_or_postgres_url
from tests.store import FACTS, LEDGER

HELD_S = 1.5  # how long the first run holds the ledger while the second must wait
WAIT_S = 60.0  # how long the second may wait on SQLite (a run: its heartbeat bound)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request, tmp_path) -> Iterator[Engine]:
    created = database.engine(sqlite_or_postgres_url(request, tmp_path))
    LEDGER.create(created)
    FACTS.create(created)
    yield created
    created.dispose()


def test_a_second_run_waits_for_the_first_runs_ledger_transaction(engine: Engine) -> None:
    acquired = threading.Event()

    def second_run() -> None:
        with engine.begin() as connection:
            LEDGER.lock(connection, WAIT_S)
            acquired.set()

    with engine.begin() as first:
        LEDGER.lock(first, WAIT_S)
        waiter = threading.Thread(target=second_run)
        waiter.start()
        assert not acquired.wait(HELD_S), "the second run took the ledger while the first held it"
    assert acquired.wait(30), "the second run did not get the ledger once the first committed"
    waiter.join(30)


def test_a_run_whose_snapshot_was_overtaken_is_refused(engine: Engine, tmp_path) -> None:
    """A later run checked board[0] up to 120; this run's snapshot ends at 100: checking it
    would take records 100-119 as new. Refused before anything is read (no Spark needed) or
    written."""
    ahead = {"board": {0: 120, 1: 40}}
    with engine.begin() as connection:
        LEDGER.rebase(connection, ahead)
    latest = {"board": {0: 100, 1: 40}}
    progress = JobProgress(1, latest)
    snapshot = Snapshot(datetime.now(UTC), {"board": {0: 0, 1: 0}}, latest, progress, progress)
    settings = Settings(var_dir=tmp_path)

    refused = pytest.raises(BoardstreamError, match=r"already checked past .*\(board\[0\]@120\)")
    with refused, engine.begin() as connection:
        incremental.check(
            None,
            connection,
            settings,
            ReconcileTarget.shipped(settings),
            Store.of(ReconcileTarget.shipped(settings)),
            snapshot,
            "",
            checks.ReconcileOptions(),
            0,
        )
    with engine.connect() as connection:
        assert LEDGER.cursor(connection) == ahead
        assert FACTS.counts(connection) == {}


# A run inside its ledger transaction, the ledger's lock held.
FROZEN = """
import sys, time
from boardstream import database
from tests.store import LEDGER
engine = database.engine(sys.argv[1])
with engine.begin() as connection:
    LEDGER.lock(connection, float(sys.argv[2]))
    print("locked", flush=True)
    time.sleep(600)
"""


def test_a_run_frozen_holding_the_ledger_is_closed_and_the_next_one_proceeds(
    postgres, request
) -> None:
    """SIGSTOP of a run holding the ledger's lock (PostgreSQL): its session idle for the wait
    bound is closed by the server, the lock freed, and the next run takes it within its own
    wait instead of waiting for the frozen one to resume."""
    url, wait_s = new_database(postgres, request), 2.0
    frozen = subprocess.Popen(
        [sys.executable, "-c", FROZEN, url, str(wait_s)],
        cwd=Path(__file__).parents[2],
        stdout=subprocess.PIPE,
        text=True,
    )
    engine = database.engine(url)
    try:
        assert frozen.stdout is not None and frozen.stdout.readline() == "locked\n"
        os.kill(frozen.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        acquired: list[float] = []

        def next_run() -> None:
            with engine.begin() as connection:
                LEDGER.lock(connection, wait_s)
                acquired.append(time.monotonic())

        waiter = threading.Thread(target=next_run, daemon=True)
        waiter.start()
        waiter.join(3 * wait_s)
        assert not waiter.is_alive(), "the next run was held in the database past its wait"
        assert acquired, "the next run gave up though the frozen one's lock was freed"
        assert acquired[0] - stopped < wait_s + 1.0
    finally:
        os.kill(frozen.pid, signal.SIGCONT)
        frozen.kill()
        frozen.wait()
        engine.dispose()
