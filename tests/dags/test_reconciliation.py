"""`reconciliation` run with dag.test() on a real pipeline: it passes on a clean run and fails,
naming the lost board, after a row is deleted from board_detail."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from boardstream.joins.job import JoinJobConfig, start_join
from boardstream.joins.member_table import JoinOptions
from boardstream.reconcile import ledger
from boardstream.sink.job import SinkJobConfig, start_sink
from tests.dags.conftest import export_settings, run_dag
from tests.integration.pipeline import Pipeline

NOW = int(time.time() * 1000)


@pytest.fixture
def pipeline(kafka, spark, airflow_home, tmp_path, monkeypatch) -> Pipeline:
    """A joined and loaded pipeline whose settings the DAG's tasks get from the environment,
    its Kafka cluster from the `kafka_default` connection."""
    pipeline = Pipeline(kafka, spark, tmp_path, var_dir=tmp_path)
    settings = pipeline.settings
    for member_id in (1, 2):
        pipeline.member(member_id, f"m{member_id}", ts=NOW)
    for i in range(6):
        pipeline.board(f"r{i}", member_id=i % 2 + 1, ts=NOW + 1 + i)
    for start in (
        lambda: start_join(spark, settings, JoinJobConfig(options=JoinOptions(), state_buckets=8)),
        lambda: start_sink(spark, settings, SinkJobConfig()),
    ):
        query = start()
        query.awaitTermination()
        assert query.exception() is None
    export_settings(monkeypatch, settings)
    return pipeline


def run_reconciliation() -> str:
    return run_dag("reconciliation.py", "reconciliation")


def test_passes_then_fails_on_a_lost_row(pipeline: Pipeline) -> None:
    engine = sa.create_engine(pipeline.settings.database)
    assert run_reconciliation() == "success"
    with engine.begin() as connection:
        connection.execute(sa.text("DELETE FROM board_detail WHERE board_id = 'r3'"))
    assert run_reconciliation() == "failed"
    first, second = (ledger.run(engine, run_id) for run_id in (1, 2))
    assert (first["passed"], second["passed"]) == (True, False)
    assert second["issues"]["missing_in_table"] == (1, ["r3"])
    assert first["run_by"].startswith("airflow:reconciliation/")
