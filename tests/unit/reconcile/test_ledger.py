"""The reconciliation ledger on a real SQLite file (the project's default database): a run is
recorded from start to PASSED, FAILED or ERRORED with exactly what it was given, read back by id
or newest first, and an older database gains the columns it lacks without losing its runs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from boardstream import database
from boardstream.reconcile.evidence import run_ledger as ledger
from boardstream.reconcile.reads.snapshot import EarlierSnapshot
from tests.store import RUNS

SNAPSHOT = {"taken_at": "2026-01-02T03:04:05+00:00", "latest": {"board": {"0": 7}}}


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return database.engine(f"sqlite:///{tmp_path / 'ledger.db'}")


def test_a_started_run_is_open(engine: Engine) -> None:
    first = RUNS.start_run(engine, SNAPSHOT, "cli:alice")
    second = RUNS.start_run(engine, {}, "cli:bob")
    assert (first, second) == (1, 2)
    run = RUNS.run(engine, first)
    assert run is not None
    assert isinstance(run.pop("started_at"), datetime)
    assert run.pop("heartbeat_at") is not None  # a run beats from its start (heartbeat)
    assert run == {
        "run_id": 1,
        "finished_at": None,
        "passed": None,
        "snapshot": SNAPSHOT,
        "counts": None,
        "run_by": "cli:alice",
        "data_docs": None,
        "status": None,
        "error": None,
        "balance": None,
        "kind": "full",
        "covered": None,
        "table_slice": None,
        "issues": {},
    }


def test_a_finished_run_keeps_its_counts_balance_and_findings(engine: Engine) -> None:
    run_id = RUNS.start_run(engine, SNAPSHOT, "cli")
    RUNS.finish_run(
        engine,
        run_id,
        False,
        {"source": 3, "missing": 1},
        {"missing": (1, ["b2"]), "extra": (0, [])},
        "/docs/reconciliation-1/index.html",
        {0: {"source": 2, "missing": 1}, 1: {"source": 1, "missing": 0}},
    )
    run = RUNS.run(engine, run_id)
    assert run is not None
    assert run["finished_at"] >= run["started_at"]
    assert {k: run[k] for k in ("passed", "status", "counts", "data_docs", "balance", "error")} == {
        "passed": False,
        "status": "FAILED",
        "counts": {"source": 3, "missing": 1},
        "data_docs": "/docs/reconciliation-1/index.html",
        # JSON object keys: the partitions come back as strings
        "balance": {"0": {"source": 2, "missing": 1}, "1": {"source": 1, "missing": 0}},
        "error": None,
    }
    assert run["issues"] == {"missing": (1, ["b2"]), "extra": (0, [])}


def test_a_passed_run_without_findings_or_balance(engine: Engine) -> None:
    run_id = RUNS.start_run(engine, SNAPSHOT, "cli")
    RUNS.finish_run(engine, run_id, True, {"source": 0}, {}, None)
    run = RUNS.run(engine, run_id)
    assert run is not None
    assert (run["passed"], run["status"], run["data_docs"], run["balance"], run["issues"]) == (
        True,
        "PASSED",
        None,
        {},
        {},
    )


def test_an_errored_run_is_neither_passed_nor_failed(engine: Engine) -> None:
    run_id = RUNS.start_run(engine, SNAPSHOT, "cli")
    RUNS.error_run(engine, run_id, "KafkaException: broker down")
    run = RUNS.run(engine, run_id)
    assert run is not None
    assert run["finished_at"] is not None
    assert (run["passed"], run["status"], run["error"], run["counts"]) == (
        False,
        "ERRORED",
        "KafkaException: broker down",
        None,
    )


def test_an_unknown_run_is_none(engine: Engine) -> None:
    assert RUNS.run(engine, 1) is None
    RUNS.start_run(engine, SNAPSHOT, "cli")
    assert RUNS.run(engine, 2) is None


def test_recent_runs_are_the_newest_first_with_their_findings(engine: Engine) -> None:
    for n in range(1, 5):
        run_id = RUNS.start_run(engine, {"n": n}, f"run {n}")
        RUNS.finish_run(engine, run_id, n != 3, {}, {"missing": (n, [f"b{n}"])}, None)
    recent = RUNS.recent_runs(engine, limit=3)
    assert [(r["run_id"], r["run_by"], r["status"]) for r in recent] == [
        (4, "run 4", "PASSED"),
        (3, "run 3", "FAILED"),
        (2, "run 2", "PASSED"),
    ]
    assert [r["issues"] for r in recent] == [
        {"missing": (4, ["b4"])},
        {"missing": (3, ["b3"])},
        {"missing": (2, ["b2"])},
    ]
    assert len(RUNS.recent_runs(engine)) == 4


def test_recent_runs_of_an_empty_ledger(engine: Engine) -> None:
    assert RUNS.recent_runs(engine) == []


def test_an_older_database_gains_the_missing_columns_and_keeps_its_runs(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "CREATE TABLE board_detail_reconciliation_run (run_id INTEGER PRIMARY KEY, "
                "started_at DATETIME NOT NULL, finished_at DATETIME, passed BOOLEAN, "
                "snapshot JSON NOT NULL, counts JSON, run_by TEXT NOT NULL, data_docs TEXT)"
            )
        )
        connection.execute(
            sa.text(
                "INSERT INTO board_detail_reconciliation_run (run_id, started_at, finished_at, "
                "passed, snapshot, counts, run_by) VALUES (1, '2025-05-01 10:00:00', "
                "'2025-05-01 10:01:00', 1, '{}', '{\"source\": 5}', 'old')"
            )
        )
    RUNS.create(engine)
    RUNS.create(engine)  # again: nothing left to add
    columns = [c["name"] for c in sa.inspect(engine).get_columns("board_detail_reconciliation_run")]
    assert columns == [
        "run_id",
        "started_at",
        "finished_at",
        "passed",
        "snapshot",
        "counts",
        "run_by",
        "data_docs",
        "status",
        "error",
        "balance",
        "kind",
        "covered",
        "table_slice",
        "heartbeat_at",
    ]
    old = RUNS.run(engine, 1)
    assert old is not None
    assert (old["run_by"], old["counts"], old["status"], old["error"], old["balance"]) == (
        "old",
        {"source": 5},
        None,
        None,
        None,
    )
    assert RUNS.start_run(engine, {}, "new") == 2


@pytest.mark.parametrize(
    ("after", "through", "shown"),
    [
        (None, None, "all 447,017 rows of board_detail"),
        (None, "b-4", "447,017 rows of board_detail, ids from the first through 'b-4'"),
        ("b-4", "b-9", "447,017 rows of board_detail, ids after 'b-4' through 'b-9'"),
        ("b-9", None, "447,017 rows of board_detail, ids after 'b-9' to the last"),
    ],
)
def test_a_table_slice_reads_as_the_ids_it_spans(after, through, shown) -> None:
    table_slice = {"table": "board_detail", "after": after, "through": through, "rows": 447_017}
    assert ledger.describe_table_slice(table_slice) == shown


def test_the_earlier_snapshot_is_the_newest_run_started_by_then_that_took_one(
    engine: Engine,
) -> None:
    """What liveness takes a record's latest possible writing time from; a run refused before
    it could take a snapshot (stored as {}) is passed over."""
    assert RUNS.earlier_snapshot(engine, datetime(2026, 1, 3, tzinfo=UTC)) is None
    runs = [
        (datetime(2026, 1, 2, 3, 4, 6, tzinfo=UTC), SNAPSHOT),
        (datetime(2026, 1, 2, 3, 10, tzinfo=UTC), {}),
        (datetime(2026, 1, 2, 3, 20, tzinfo=UTC), {**SNAPSHOT, "latest": {"board": {"0": 9}}}),
    ]
    with engine.begin() as connection:
        for started_at, snapshot in runs:
            connection.execute(
                RUNS.run_table.insert().values(
                    started_at=started_at, snapshot=snapshot, run_by="test"
                )
            )
    first = EarlierSnapshot(int(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp() * 1000), {})
    assert RUNS.earlier_snapshot(engine, datetime(2026, 1, 2, 3, 4, tzinfo=UTC)) is None
    assert RUNS.earlier_snapshot(engine, datetime(2026, 1, 2, 3, 15, tzinfo=UTC)) == replace(
        first, latest={"board": {0: 7}}
    )
    assert RUNS.earlier_snapshot(engine, datetime(2026, 1, 2, 3, 20, tzinfo=UTC)) == replace(
        first, latest={"board": {0: 9}}
    )
