"""Open runs told apart by their heartbeat alone, on real SQLite and PostgreSQL (no Spark): a
run whose heartbeat beats stays open however long it runs, one whose heartbeat stopped is closed
as ERRORED, interrupted, by the next run, and a verdict that comes after that is refused."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from boardstream import database
from boardstream.reconcile.evidence import run_ledger as ledger
from boardstream.reconcile.evidence.heartbeat import Heartbeat
from tests.fixtures import sqlite_or_postgres_url
from tests.store import RUNS

TIMEOUT_S = 2.0  # the bound: a beat every 0.1 s


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request, tmp_path) -> Iterator[Engine]:
    created = database.engine(sqlite_or_postgres_url(request, tmp_path))
    RUNS.create(created)
    yield created
    created.dispose()


def status(engine: Engine, run_id: int) -> tuple[str | None, str | None]:
    found = RUNS.run(engine, run_id)
    assert found is not None
    return found["status"], found["error"]


def test_a_beating_run_stays_open_and_a_silent_one_is_closed(engine: Engine) -> None:
    bound = timedelta(seconds=TIMEOUT_S)
    live = RUNS.start_run(engine, {}, "test")
    with Heartbeat(engine, RUNS, live, TIMEOUT_S):
        time.sleep(TIMEOUT_S * 2)  # older than the bound by its start, not by its heartbeat
        other = RUNS.start_run(engine, {}, "beside it")
        assert RUNS.close_interrupted(engine, other, bound) == []
        assert status(engine, live) == (None, None)
    RUNS.finish_run(engine, other, True, {}, {}, None)
    time.sleep(TIMEOUT_S * 1.5)  # its process gone: no beat since
    found_by = RUNS.start_run(engine, {}, "next")
    (line,) = RUNS.close_interrupted(engine, found_by, bound)
    assert line.startswith(f"run {live} closed as ERRORED: interrupted: found open by run")
    run_status, error = status(engine, live)
    assert run_status == ledger.ERRORED
    assert error is not None
    assert error.startswith(f"interrupted: found open by run {found_by} at ")
    assert RUNS.close_interrupted(engine, found_by + 1, bound) == []  # closed once
    # The dead run's verdict, had it come after all, does not overwrite what the ledger says.
    with pytest.raises(ledger.RunClosedError, match="another run closed it while it ran"):
        RUNS.finish_run(engine, live, True, {"source": 1}, {"missing": (0, [])}, None)
    RUNS.error_run(engine, live, "too late")
    assert status(engine, live) == (run_status, error)


def test_a_run_from_before_heartbeats_is_judged_by_its_start(engine: Engine) -> None:
    """No heartbeat column then: an open run started longer ago than the bound is closed, one
    started within it is left."""
    now = datetime.now(UTC)
    with engine.begin() as connection:
        for started in (now - timedelta(days=3), now - timedelta(seconds=10)):
            connection.execute(
                RUNS.run_table.insert().values(
                    started_at=started, snapshot={}, run_by="an older version"
                )
            )
    old, recent = sorted(run["run_id"] for run in RUNS.recent_runs(engine))
    found_by = RUNS.start_run(engine, {}, "next")
    (line,) = RUNS.close_interrupted(engine, found_by, timedelta(minutes=5))
    assert line.startswith(f"run {old} closed as ERRORED: interrupted")
    assert status(engine, old)[0] == ledger.ERRORED
    assert status(engine, recent) == (None, None)


def test_a_ledger_from_before_heartbeats_gains_the_column(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(
            sa.text("ALTER TABLE board_detail_reconciliation_run DROP COLUMN heartbeat_at")
        )
    RUNS.create(engine)
    run_id = RUNS.start_run(engine, {}, "test")
    assert RUNS.run(engine, run_id)["heartbeat_at"] is not None
