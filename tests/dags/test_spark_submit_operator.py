"""The catch-up jobs' operator on a checkpoint a live stream owns: skipped when scheduled,
failed when run explicitly, before any spark-submit, naming the stream's driver; and the same
when the stream took the checkpoint after that check, refusing the job itself."""

from __future__ import annotations

from contextlib import ExitStack
from types import SimpleNamespace

import pytest

from boardstream.settings import Settings
from boardstream.spark.checkpoint_lease import hold, holder
from tests.fixtures import isolated_settings


@pytest.fixture
def operator(airflow_home):
    from boardstream_airflow.operators.spark_submit import BoardstreamSparkSubmitOperator

    return BoardstreamSparkSubmitOperator(task_id="join", job="board-detail-join")


@pytest.mark.parametrize(
    ("run_type", "refusal"),
    [("scheduled", "AirflowSkipException"), ("manual", "AirflowFailException")],
)
def test_a_live_checkpoint_refuses_the_catch_up_run(operator, tmp_path, run_type, refusal) -> None:
    settings = isolated_settings(tmp_path, lease_ttl_s=1)
    context = {"dag_run": SimpleNamespace(run_type=run_type)}
    operator._refuse_a_live_checkpoint(settings, context)  # nobody holds it: no refusal
    checkpoint = settings.checkpoint("board-detail-join")
    with (
        hold(settings, checkpoint, "board-detail-join", {"application_id": "app-3"}),
        pytest.raises(Exception) as refused,
    ):
        driver = holder(settings, checkpoint)
        assert driver is not None
        operator._refuse_a_live_checkpoint(settings, context)
    assert type(refused.value).__name__ == refusal
    assert str(refused.value) == (
        f"board-detail-join: a live stream owns its checkpoint: {driver.describe()}. Catch-up "
        "and backfill run when it is stopped (board_detail_stream_request, action=stop)."
    )
    assert "app-3" in driver.describe()


@pytest.mark.parametrize(
    ("run_type", "refusal", "lease_taken"),
    [
        ("scheduled", "AirflowSkipException", True),
        ("manual", "AirflowFailException", True),
        ("scheduled", "AirflowException", False),  # failed for another reason: it stands
    ],
)
def test_a_stream_that_took_the_checkpoint_meanwhile_refuses_the_run_alike(
    operator, tmp_path, monkeypatch, run_type, refusal, lease_taken
) -> None:
    """Issue #48: a retried catch-up run raced the stream's start and failed ("checkpoint ...
    is in use") instead of being skipped. The check before spark-submit saw no stream; the
    stream then took the lease and the job, refused, failed spark-submit. At the provider's
    execute, the seam where spark-submit would run, the stream takes the lease and the job
    fails as spark-submit reports it."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow.sdk.exceptions import AirflowException

    connection = '{"conn_type": "kafka", "extra": {"bootstrap.servers": "localhost:1"}}'
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_DEFAULT", connection)
    monkeypatch.setenv("BOARDSTREAM_CHECKPOINT_ROOT", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("BOARDSTREAM_DATABASE_URL", f"sqlite:///{tmp_path / 'db'}")  # leases
    monkeypatch.setenv("BOARDSTREAM_LEASE_TTL_S", "1")
    checkpoint = tmp_path / "checkpoints" / "board-detail-join"
    with ExitStack() as stream:

        def refused_job(self, context) -> None:
            if lease_taken:
                settings = Settings()
                stream.enter_context(hold(settings, checkpoint, "board-detail-join", {}))
            raise AirflowException("Cannot execute: spark-submit ... Error code is: 2.")

        monkeypatch.setattr(SparkSubmitOperator, "execute", refused_job)
        with pytest.raises(Exception) as refused:
            operator.execute({"dag_run": SimpleNamespace(run_type=run_type)})
    assert type(refused.value).__name__ == refusal, str(refused.value)
    assert ("a live stream owns its checkpoint" in str(refused.value)) == lease_taken


@pytest.mark.parametrize(
    ("env_vars", "driver_collector"),
    [({}, "-XX:+UseParallelGC"), ({"SPARK_SUBMIT_OPTS": "-XX:+UseG1GC"}, None)],
)
def test_the_driver_gets_the_parallel_collector_unless_its_environment_chose_one(
    operator, tmp_path, monkeypatch, env_vars, driver_collector
) -> None:
    """spark-submit starts in the worker's environment plus the task's env_vars: a collector
    chosen there is the driver's, and a second one in its options would stop its JVM
    ("Multiple garbage collectors selected"). What spark-submit would be given is read at the
    provider's execute, the seam where the process would start."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from boardstream.spark.class_archive import DRIVER_OPTIONS
    from boardstream.spark.collector import DRIVER_ENVIRONMENT, EXECUTOR_OPTIONS, PARALLEL

    for name in DRIVER_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    connection = '{"conn_type": "kafka", "extra": {"bootstrap.servers": "localhost:1"}}'
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_DEFAULT", connection)
    monkeypatch.setenv("BOARDSTREAM_CHECKPOINT_ROOT", str(tmp_path / "checkpoints"))
    given = {}
    monkeypatch.setattr(
        SparkSubmitOperator, "execute", lambda self, context: given.update(self.conf)
    )
    operator.env_vars = env_vars
    operator.execute({"dag_run": SimpleNamespace(run_type="manual")})
    collectors = [o for o in given[DRIVER_OPTIONS].split() if o.endswith("GC")]
    assert collectors == ([driver_collector] if driver_collector else [])
    assert PARALLEL in given[EXECUTOR_OPTIONS].split()  # executors start elsewhere
