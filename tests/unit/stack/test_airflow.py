"""The local Airflow's wiring: connections from the settings, a generated password kept."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from boardstream.errors import BoardstreamError
from boardstream.settings import PROJECT_ROOT
from boardstream.stack.airflow import (
    EDGE_EXECUTOR,
    AirflowStandalone,
    airflow_connections,
    runs_standalone,
    uses_edge_executor,
)
from tests.fixtures import isolated_settings


def test_connections_point_where_the_settings_point(tmp_path: Path) -> None:
    settings = isolated_settings(
        tmp_path, bootstrap_servers="broker:29092", spark_master="spark://master:7077"
    )
    connections = {k: json.loads(v) for k, v in airflow_connections(settings).items()}
    assert connections == {
        "AIRFLOW_CONN_KAFKA_DEFAULT": {
            "conn_type": "kafka",
            "extra": {"bootstrap.servers": "broker:29092", "security.protocol": "PLAINTEXT"},
        },
        "AIRFLOW_CONN_SPARK_DEFAULT": {"conn_type": "spark", "host": "spark://master:7077"},
    }


def test_kafka_connection_carries_the_sasl_settings(tmp_path: Path) -> None:
    settings = isolated_settings(
        tmp_path,
        security_protocol="SASL_PLAINTEXT",
        sasl_username="boardstream",
        sasl_password="s3cret-value",
    )
    extra = json.loads(airflow_connections(settings)["AIRFLOW_CONN_KAFKA_DEFAULT"])["extra"]
    assert extra == settings.to_confluent()
    assert extra["sasl.password"] == "s3cret-value" and extra["sasl.mechanism"] == "SCRAM-SHA-512"
    # The hook's way back: the connection's extra gives the same settings.
    assert settings.model_copy(update={"sasl_password": None}).with_kafka_config(extra) == settings


def test_password_is_generated_once_and_private(tmp_path: Path) -> None:
    airflow = AirflowStandalone(isolated_settings(tmp_path))
    first = airflow.password()
    assert len(first) >= 16 and airflow.password() == first
    assert airflow.passwords_file.stat().st_mode & 0o777 == 0o600
    assert json.loads(airflow.passwords_file.read_text()) == {"admin": first}


def test_env_runs_this_repo_with_this_venv(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path)
    env = AirflowStandalone(settings).env()
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(PROJECT_ROOT / "dags")
    assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == str(PROJECT_ROOT / "plugins")
    assert env["AIRFLOW_HOME"] == str(settings.var_dir / "airflow")
    assert env["AIRFLOW__API__PORT"] == str(settings.airflow_port)


def test_the_cluster_settings_left_unset_add_nothing(tmp_path: Path) -> None:
    """Single-host `stack up --airflow` as before them: standalone, Airflow's own database,
    executor and binding, its own token key."""
    airflow = AirflowStandalone(isolated_settings(tmp_path))
    assert sorted(airflow.env()) == [
        "AIRFLOW_CONN_KAFKA_DEFAULT",
        "AIRFLOW_CONN_SPARK_DEFAULT",
        "AIRFLOW_HOME",
        "AIRFLOW__API__BASE_URL",
        "AIRFLOW__API__PORT",
        "AIRFLOW__CORE__DAGS_FOLDER",
        "AIRFLOW__CORE__LOAD_EXAMPLES",
        "AIRFLOW__CORE__PLUGINS_FOLDER",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS",
        "PATH",
    ]
    assert airflow.command == [str(Path(sys.executable).parent / "airflow"), "standalone"]
    assert airflow.process.marker == f"{Path(sys.executable).parent / 'airflow'} standalone"
    assert (
        airflow.env()["AIRFLOW__API__BASE_URL"]
        == f"http://localhost:{airflow.settings.airflow_port}"
    )


def test_cluster_settings_make_an_airflow_of_the_edge_executor(tmp_path: Path) -> None:
    settings = isolated_settings(
        tmp_path,
        airflow_host="10.0.0.2",
        airflow_port=8181,
        airflow_executor=EDGE_EXECUTOR,
        airflow_database_url="postgresql+psycopg2://airflow:pw@localhost:5433/airflow",
        airflow_jwt_secret="shared-key",
        airflow_dags_folder=tmp_path / "dags",
    )
    airflow = AirflowStandalone(settings)
    env = airflow.env()
    assert airflow.address == "http://10.0.0.2:8181"
    assert {
        key: env[key] for key in env if key.startswith("AIRFLOW__") and "SIMPLE" not in key
    } == {
        "AIRFLOW__API__HOST": "10.0.0.2",
        "AIRFLOW__API__PORT": "8181",
        "AIRFLOW__API__BASE_URL": "http://10.0.0.2:8181",
        "AIRFLOW__API_AUTH__JWT_SECRET": "shared-key",
        "AIRFLOW__CORE__EXECUTOR": EDGE_EXECUTOR,
        "AIRFLOW__CORE__DAGS_FOLDER": str(tmp_path / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(PROJECT_ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": (
            "postgresql+psycopg2://airflow:pw@localhost:5433/airflow"
        ),
        "AIRFLOW__EDGE__API_ENABLED": "True",
    }
    # Standalone would replace the executor: the components run without it.
    assert airflow.command == [sys.executable, "-m", "boardstream.entrypoints.airflow_components"]
    assert airflow.process.marker == " ".join(airflow.command)
    # Secrets stay out of the settings' repr (and so of logs).
    assert "pw@" not in repr(settings) and "shared-key" not in repr(settings)


def test_the_edge_executor_is_found_in_a_list_of_executors_and_aliases(tmp_path: Path) -> None:
    def edge(executor: str | None) -> tuple[bool, bool]:
        settings = isolated_settings(tmp_path, airflow_executor=executor)
        return uses_edge_executor(settings), runs_standalone(settings)

    assert edge(None) == (False, True)
    assert edge("LocalExecutor") == (False, True)
    assert edge(EDGE_EXECUTOR) == (True, False)
    assert edge(f"LocalExecutor, edge:{EDGE_EXECUTOR}") == (True, False)
    assert edge("CeleryExecutor") == (False, False)


def test_the_edge_executor_without_the_shared_key_is_refused_before_starting(
    tmp_path: Path,
) -> None:
    airflow = AirflowStandalone(isolated_settings(tmp_path, airflow_executor=EDGE_EXECUTOR))
    with pytest.raises(BoardstreamError, match="needs BOARDSTREAM_AIRFLOW_JWT_SECRET"):
        airflow.start()
    assert airflow.process.pid() is None and not airflow.log_file.exists()
