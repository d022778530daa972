"""The DAG tests' pipeline: a few boards joined and loaded as the jobs do it (the Airflow
fixtures themselves are in tests/airflow_fixtures.py)."""

from __future__ import annotations

import time

import pytest

from boardstream.joins.job import JoinJobConfig, start_join
from boardstream.joins.member_table import JoinOptions
from boardstream.sink.job import SinkJobConfig, start_sink
from boardstream.spark import streaming
from tests.airflow_fixtures import export_settings
from tests.pipeline import Pipeline


@pytest.fixture
def loaded_pipeline(kafka, spark, airflow_home, tmp_path, monkeypatch) -> Pipeline:
    """Two members and six boards (r0..r5, timestamped now, inside the topics' retention),
    joined and loaded as the jobs do it (default checkpoints, progress lines), with the
    settings exported for the DAGs' tasks."""
    pipeline = Pipeline(kafka, spark, tmp_path, var_dir=tmp_path)
    settings = pipeline.settings
    now = int(time.time() * 1000)
    for member_id in (1, 2):
        pipeline.member(member_id, f"m{member_id}", ts=now)
    for i in range(6):
        pipeline.board(f"r{i}", member_id=i % 2 + 1, ts=now + 1 + i)
    join, sink = JoinJobConfig(options=JoinOptions(), state_buckets=8), SinkJobConfig()
    for start, config in (
        (lambda: start_join(spark, settings, join), None),
        (lambda: start_sink(spark, settings, sink), sink),  # its writes fenced by its lease
    ):
        query = streaming.run(spark, settings, start, config)  # as the jobs run: progress kept
        assert query.exception() is None
    export_settings(monkeypatch, settings)
    return pipeline
