"""The catch-up jobs' operator on a checkpoint a live stream owns: skipped when scheduled,
failed when run explicitly, before any spark-submit, naming the stream's driver."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from boardstream.spark.checkpoint_lease import hold
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
    settings = isolated_settings(tmp_path)
    context = {"dag_run": SimpleNamespace(run_type=run_type)}
    operator._refuse_a_live_checkpoint(settings, context)  # nobody holds it: no refusal
    checkpoint = settings.checkpoints / "board-detail-join"
    with (
        hold(checkpoint, "board-detail-join", {"application_id": "app-3"}) as driver,
        pytest.raises(Exception) as refused,
    ):
        operator._refuse_a_live_checkpoint(settings, context)
    assert type(refused.value).__name__ == refusal
    assert str(refused.value) == (
        f"board-detail-join: a live stream owns its checkpoint: {driver.describe()}. Catch-up "
        "and backfill run when it is stopped (board_detail_stream_request, action=stop)."
    )
    assert "app-3" in driver.describe()
