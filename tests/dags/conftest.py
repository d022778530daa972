"""A throwaway Airflow home (SQLite metadata database, this repo's dags/ and plugins/).

Airflow reads its configuration when first imported, so the environment is set here, before
any test module imports it; no test module imports Airflow at its top.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardstream.settings import PROJECT_ROOT

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
