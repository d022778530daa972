"""`changelog_compaction_tuning` run with dag.test() against the real broker."""

from __future__ import annotations

import json
import uuid

import pytest
import sqlalchemy as sa

from boardstream import database
from boardstream.compaction import tuning_log
from boardstream.generator.plan import GeneratorOptions
from boardstream.generator.producer import produce
from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import create_topics, describe_topics, platform_topics
from boardstream.settings import Settings


@pytest.fixture
def tuned_env(kafka: Settings, airflow_home, tmp_path, monkeypatch) -> Settings:
    settings = kafka.with_topic_prefix(f"dagcmp{uuid.uuid4().hex[:6]}", var_dir=tmp_path)
    create_topics(admin_client(settings), settings, platform_topics(settings))
    options = GeneratorOptions(members=500, boards=0, update_ratio=4, deletes=10, seed=3)
    produce(settings, options, tmp_path / "manifest.json", 60)
    connection = {"conn_type": "kafka", "extra": {"bootstrap.servers": kafka.bootstrap_servers}}
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_DEFAULT", json.dumps(connection))
    monkeypatch.setenv("BOARDSTREAM_VAR_DIR", str(tmp_path))
    monkeypatch.setenv("BOARDSTREAM_DATABASE_URL", settings.database)
    return settings


def run(conf: dict) -> dict[str, str]:
    from airflow.dag_processing.dagbag import DagBag

    from tests.airflow_fixtures import DAGS

    dag = DagBag(dag_folder=DAGS / "changelog_compaction_tuning.py").get_dag(
        "changelog_compaction_tuning"
    )
    dagrun = dag.test(run_conf=conf)
    return {ti.task_id: ti.state for ti in dagrun.get_task_instances()} | {"run": dagrun.state}


def member_configs(settings: Settings) -> dict:
    (described,) = describe_topics(admin_client(settings), settings, [settings.member_topic])
    return described.configs


def test_dry_run_then_apply_then_verify(tuned_env: Settings) -> None:
    settings = tuned_env
    before = member_configs(settings)
    conf = {"topics": [settings.member_topic], "dry_run": True}
    assert run(conf) == {
        "verify_previous_changes": "success",
        "tune_compacted_topics": "success",
        "run": "success",
    }
    assert member_configs(settings) == before

    assert run({**conf, "dry_run": False})["run"] == "success"
    engine = database.engine(settings.database)
    (change_id,) = tuning_log.unverified(engine)
    logged = tuning_log.change(engine, change_id)
    assert logged[0].topic == settings.member_topic
    assert logged[0].run_by.startswith("airflow:changelog_compaction_tuning/")
    after = member_configs(settings)
    assert {s.setting: after[s.setting] for s in logged} == {
        s.setting: (s.new_value, False) for s in logged
    }

    # The next run verifies that change and finds nothing left to change.
    assert run({**conf, "dry_run": False})["run"] == "success"
    assert tuning_log.unverified(engine) == []
    with engine.connect() as connection:
        changes = connection.execute(
            sa.select(sa.func.count(sa.distinct(tuning_log.compaction_tuning_log.c.change_id)))
        ).scalar()
    assert changes == 1
    assert tuning_log.change(engine, change_id)[0].records_after is not None
