"""The parts of a repair that need neither Spark nor Kafka: the snapshot a stored run is
re-checked against (exactly as stored, or a clear error for a run that does not exist), and the
table repair's deletion of foreign rows on a real SQLite table. Re-joining and reloading boards
runs the join's and the sink's Spark code: tests/integration/test_repair_cli.py covers them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from boardstream import database
from boardstream.errors import BoardstreamError
from boardstream.joins.member_table import JoinOptions
from boardstream.reconcile.reads.snapshot import JobProgress, Snapshot
from boardstream.reconcile.repair import _rejoin, _repair_table, stored_snapshot
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import Settings
from boardstream.sink import table
from tests.fixtures import detail_row
from tests.store import RUNS

SNAPSHOT = Snapshot(
    datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=UTC),
    earliest={"board": {0: 0, 1: 3}, "member": {0: 0}},
    latest={"board": {0: 10, 1: 12}, "member": {0: 7}},
    join=JobProgress(
        4,
        {"board": {0: 10, 1: 11}, "member": {0: 7}},
        1_767_323_045_000,
        {"board": {0: 10, 1: 12}, "member": {0: 7}},
    ),
    sink=JobProgress(None, {}),
)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(var_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'boardstream.db'}")


def _board_ids(settings: Settings) -> list[str]:
    with database.engine(settings.database).connect() as connection:
        query = sa.select(table.board_detail.c.board_id).order_by("board_id")
        return list(connection.execute(query).scalars())


def test_a_stored_runs_snapshot_is_the_one_it_checked(settings: Settings) -> None:
    engine = database.engine(settings.database)
    RUNS.start_run(engine, {}, "cli")
    run_id = RUNS.start_run(engine, SNAPSHOT.to_json(), "cli")
    assert stored_snapshot(engine, RUNS, run_id) == SNAPSHOT


def test_an_unknown_run_cannot_be_repaired(settings: Settings) -> None:
    engine = database.engine(settings.database)
    with pytest.raises(BoardstreamError) as refused:
        stored_snapshot(engine, RUNS, 7)
    assert str(refused.value) == "no reconciliation run 7 in board_detail_reconciliation_run"


def test_foreign_rows_are_deleted_and_the_rest_kept(settings: Settings) -> None:
    """With nothing to reload, no board-detail record is read: spark is never used."""
    engine = database.engine(settings.database)
    table.create(engine)
    table.upsert(
        engine,
        [
            detail_row("b1", 1, member_id=1),
            detail_row("b2", 2, member_id=1),
            detail_row("b3", 3, member_id=1),
        ],
    )
    _repair_table(None, settings, ReconcileTarget.shipped(settings), set(), {"b2", "ghost"})  # type: ignore[arg-type]
    assert _board_ids(settings) == ["b1", "b3"]
    _repair_table(None, settings, ReconcileTarget.shipped(settings), set(), set())  # type: ignore[arg-type]
    assert _board_ids(settings) == ["b1", "b3"]


def test_no_missing_boards_is_nothing_to_rejoin(settings: Settings) -> None:
    target = ReconcileTarget.shipped(settings)
    rejoined = _rejoin(None, settings, target, SNAPSHOT, set(), JoinOptions())  # type: ignore[arg-type]
    assert rejoined == set()
