"""The local Airflow's wiring: connections from the settings, a generated password kept."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from boardstream.settings import PROJECT_ROOT
from boardstream.stack.airflow import AirflowStandalone, airflow_connections
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
