"""A throwaway Airflow home (SQLite metadata database, this repo's dags/ and plugins/).

Airflow reads its configuration when first imported, so the environment is set here, before
any test module imports it; no test module imports Airflow at its top.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardstream.joins.job import JoinJobConfig, start_join
from boardstream.joins.member_table import JoinOptions
from boardstream.settings import PROJECT_ROOT, Settings
from boardstream.sink.job import SinkJobConfig, start_sink
from boardstream.spark import streaming
from boardstream.stack.airflow import airflow_connections
from tests.integration.pipeline import Pipeline

DAGS, PLUGINS = PROJECT_ROOT / "dags", PROJECT_ROOT / "plugins"


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("airflow-home")
    os.environ.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(PLUGINS),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        }
    )
    airflow = Path(sys.executable).parent / "airflow"
    migrate = subprocess.run(
        [str(airflow), "db", "migrate"], capture_output=True, text=True, timeout=300, check=False
    )
    assert migrate.returncode == 0, migrate.stdout[-2000:] + migrate.stderr[-2000:]
    sys.path.insert(0, str(PLUGINS))  # as Airflow does for the plugins folder
    yield home
    sys.path.remove(str(PLUGINS))


@pytest.fixture(scope="session")
def dagbag(airflow_home: Path):
    """Built once: parsing every DAG file is the slow part."""
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=DAGS)


def export_settings(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    """Let the DAGs' tasks, and the spark-submit jobs they start, see ``settings``: every field
    as its BOARDSTREAM_ env var, the Kafka cluster as the ``kafka_default`` connection and the
    Spark master as ``spark_default``, as setup configures them for a real deployment."""
    fields = {
        **settings.model_dump(),
        "jar_cache": settings.jars_dir,
        "database_url": settings.database,
    }
    for name, value in fields.items():
        if value is not None:
            monkeypatch.setenv(f"BOARDSTREAM_{name.upper()}", str(value))
    for name, value in airflow_connections(settings).items():
        monkeypatch.setenv(name, value)


def run_dag(dag_file: str, dag_id: str, **params: object) -> str:
    """``dag.test()`` of one DAG file, parsed afresh; the run's state."""
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=DAGS / dag_file).get_dag(dag_id)
    return dag.test(run_conf=params or None).state


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
    for start in (
        lambda: start_join(spark, settings, JoinJobConfig(options=JoinOptions(), state_buckets=8)),
        lambda: start_sink(spark, settings, SinkJobConfig()),
    ):
        query = streaming.run(spark, settings, start)  # as the jobs run: progress lines kept
        assert query.exception() is None
    export_settings(monkeypatch, settings)
    return pipeline
