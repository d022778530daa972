"""`reconciliation` and `reconciliation_full` run with dag.test() on a real pipeline: the first
passes on a clean run (a full one: no ledger yet) and fails incrementally, naming the lost
board, after a row is deleted from board_detail; the daily full run finds the same."""

from __future__ import annotations

import sqlalchemy as sa

from tests.airflow_fixtures import run_dag
from tests.pipeline import Pipeline
from tests.store import RUNS


def run_reconciliation() -> str:
    return run_dag("reconciliation.py", "reconciliation")


def run_full_reconciliation() -> str:
    return run_dag("reconciliation_full.py", "reconciliation_full")


def test_passes_then_fails_on_a_lost_row(loaded_pipeline: Pipeline) -> None:
    engine = sa.create_engine(loaded_pipeline.settings.database)
    assert run_reconciliation() == "success"
    with engine.begin() as connection:
        connection.execute(sa.text("DELETE FROM board_detail WHERE board_id = 'r3'"))
    assert run_reconciliation() == "failed"
    assert run_full_reconciliation() == "failed"
    first, second, third = (RUNS.run(engine, run_id) for run_id in (1, 2, 3))
    assert (first["passed"], second["passed"], third["passed"]) == (True, False, False)
    assert (first["kind"], second["kind"], third["kind"]) == ("full", "incremental", "full")
    assert second["issues"]["missing_in_table"] == (1, ["r3"])
    assert third["issues"]["missing_in_table"] == (1, ["r3"])
    assert first["run_by"].startswith("airflow:reconciliation/")
    assert third["run_by"].startswith("airflow:reconciliation_full/")
