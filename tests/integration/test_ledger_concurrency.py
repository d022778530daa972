"""Two reconciliations at once (#22), on real SQLite and PostgreSQL: the second waits for the
first's ledger transaction rather than interleaving with it, and an incremental run whose
snapshot a later run has already checked past is refused, leaving the ledger as it was."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy.engine import Engine

from boardstream import database
from boardstream.errors import BoardstreamError
from boardstream.reconcile.checks import spark_checks as checks
from boardstream.reconcile.incremental import digest_ledger, fact_store
from boardstream.reconcile.incremental import inputs as incremental
from boardstream.reconcile.reads.snapshot import JobProgress, Snapshot
from boardstream.settings import Settings
from tests.fixtures import sqlite_or_postgres_url

HELD_S = 1.5  # how long the first run holds the ledger while the second must wait
WAIT_S = 60.0  # how long the second may wait on SQLite (a run: its heartbeat bound)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request, tmp_path) -> Iterator[Engine]:
    created = database.engine(sqlite_or_postgres_url(request, tmp_path))
    digest_ledger.create(created)
    fact_store.create(created)
    yield created
    created.dispose()


def test_a_second_run_waits_for_the_first_runs_ledger_transaction(engine: Engine) -> None:
    acquired = threading.Event()

    def second_run() -> None:
        with engine.begin() as connection:
            digest_ledger.lock(connection, WAIT_S)
            acquired.set()

    with engine.begin() as first:
        digest_ledger.lock(first, WAIT_S)
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
        digest_ledger.rebase(connection, ahead)
    latest = {"board": {0: 100, 1: 40}}
    progress = JobProgress(1, latest)
    snapshot = Snapshot(datetime.now(UTC), {"board": {0: 0, 1: 0}}, latest, progress, progress)
    settings = Settings(var_dir=tmp_path)

    refused = pytest.raises(BoardstreamError, match=r"already checked past .*\(board\[0\]@120\)")
    with refused, engine.begin() as connection:
        incremental.check(None, connection, settings, snapshot, "", checks.ReconcileOptions(), 0)
    with engine.connect() as connection:
        assert digest_ledger.cursor(connection) == ahead
        assert fact_store.counts(connection) == {}
