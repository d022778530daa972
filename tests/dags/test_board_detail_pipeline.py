"""`board_detail_pipeline` run with dag.test() on the live broker: both tasks spark-submit their
job (local[2], from the `spark_default` connection), and what they wrote then reconciles."""

from __future__ import annotations

import base64

import pytest

from tests.airflow_fixtures import export_settings, run_dag
from tests.pipeline import Pipeline, query


@pytest.fixture
def pipeline(kafka, airflow_home, tmp_path, monkeypatch) -> Pipeline:
    pipeline = Pipeline(kafka, None, tmp_path, var_dir=tmp_path)
    export_settings(monkeypatch, pipeline.settings)
    return pipeline


def test_pipeline_run_joins_loads_and_reconciles(pipeline: Pipeline, t0: int) -> None:
    for member_id in (1, 2, 3):
        pipeline.member(member_id, f"m{member_id}", ts=t0)
    for i in range(8):
        pipeline.board(f"p{i}", member_id=i % 3 + 1, ts=t0 + 1 + i)
    pipeline.send(pipeline.settings.board_topic, b"broken", b"{not json", ts=t0 + 20)

    assert run_dag("board_detail_pipeline.py", "board_detail_pipeline") == "success"

    rows = query(pipeline.settings.database, "SELECT board_id, nickname FROM board_detail")
    assert sorted(rows) == [(f"p{i}", f"m{i % 3 + 1}") for i in range(8)]
    assert sorted(pipeline.detail()) == [f"p{i}" for i in range(8)]
    letters = pipeline.dead_letters()
    assert [(base64.b64decode(d["key_base64"]), d["error"]) for d in letters] == [
        (b"broken", "value is not valid JSON")
    ]
    assert run_dag("reconciliation.py", "reconciliation") == "success"
