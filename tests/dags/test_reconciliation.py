"""`reconciliation` run with dag.test() on a real pipeline: it passes on a clean run and fails,
naming the lost board, after a row is deleted from board_detail."""

from __future__ import annotations

import sqlalchemy as sa

from boardstream.reconcile import ledger
from tests.airflow_fixtures import run_dag
from tests.pipeline import Pipeline


def run_reconciliation() -> str:
    return run_dag("reconciliation.py", "reconciliation")


def test_passes_then_fails_on_a_lost_row(loaded_pipeline: Pipeline) -> None:
    engine = sa.create_engine(loaded_pipeline.settings.database)
    assert run_reconciliation() == "success"
    with engine.begin() as connection:
        connection.execute(sa.text("DELETE FROM board_detail WHERE board_id = 'r3'"))
    assert run_reconciliation() == "failed"
    first, second = (ledger.run(engine, run_id) for run_id in (1, 2))
    assert (first["passed"], second["passed"]) == (True, False)
    assert second["issues"]["missing_in_table"] == (1, ["r3"])
    assert first["run_by"].startswith("airflow:reconciliation/")
