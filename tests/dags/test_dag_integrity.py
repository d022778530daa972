"""Every DAG imports cleanly, cheaply, and follows the project's conventions."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from tests.airflow_fixtures import DAGS, PLUGINS

DAG_FILES = sorted(path.name for path in DAGS.glob("*.py"))


def test_no_import_errors(dagbag) -> None:
    assert dagbag.import_errors == {}, "\n".join(
        f"{path}: {error}" for path, error in dagbag.import_errors.items()
    )
    assert set(dagbag.dag_ids) == {
        "board_aggregations",
        "board_detail_pipeline",
        "board_detail_repair",
        "board_detail_stream",
        "board_detail_stream_request",
        "changelog_compaction_tuning",
        "demo_data",
        "reconciliation",
        "reconciliation_full",
    }


def test_every_dag_has_tags_retries_and_docs(dagbag) -> None:
    for dag_id, dag in dagbag.dags.items():
        assert dag.tags, f"{dag_id} has no tags"
        assert dag.default_args.get("retries") is not None, f"{dag_id} sets no retries"
        assert dag.doc_md, f"{dag_id} has no doc_md"
        assert dag.catchup is False, f"{dag_id} would backfill"


@pytest.mark.parametrize("dag_file", DAG_FILES)
def test_parsing_does_no_heavy_work(airflow_home, dag_file: str) -> None:
    """The scheduler parses DAG files over and over: no Spark, Kafka client or database
    driver may be imported at the top of one."""
    probe = (
        "import runpy, sys\n"
        f"sys.path.insert(0, {str(PLUGINS)!r})\n"  # as Airflow puts plugins/ on sys.path
        f"runpy.run_path({str(DAGS / dag_file)!r})\n"
        "heavy = [m for m in ('pyspark', 'confluent_kafka', 'boardstream.compaction',"
        " 'great_expectations') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "", f"{dag_file} imports {result.stdout.strip()} at parse time"


def test_only_scheduled_dags_start_paused(dagbag) -> None:
    """Issue #48: a stop requested on a fresh stack stayed queued, its DAG paused."""
    on_request = {
        d for d, dag in dagbag.dags.items() if type(dag.timetable).__name__ == "NullTimetable"
    }
    assert on_request == {"board_detail_repair", "board_detail_stream_request", "demo_data"}
    for dag_id, dag in dagbag.dags.items():
        assert dag.is_paused_upon_creation is (dag_id not in on_request), dag_id


def test_pipeline_hands_the_asset_to_reconciliation(dagbag) -> None:
    """The sink's outlet is the Asset reconciliation is scheduled on."""
    from boardstream_airflow.assets import BOARD_DETAIL

    sink = dagbag.get_dag("board_detail_pipeline").get_task("sink")
    assert sink.outlets == [BOARD_DETAIL]
    assert dagbag.get_dag("reconciliation").timetable.asset_condition == BOARD_DETAIL


@pytest.mark.parametrize("dag_id", ["board_detail_stream", "board_detail_stream_request"])
def test_stream_intervals_are_taken_only_in_the_form_spark_reads(dagbag, dag_id: str) -> None:
    """Before, ``30s`` passed the params and the stream then failed to start ("Invalid value
    30s" from Spark's trigger)."""
    from airflow.sdk.definitions.param import ParamValidationError

    params = dagbag.dags[dag_id].params
    for name in ("interval", "sink_interval"):
        assert params.get_param(name).resolve("1 minute 30 seconds") == "1 minute 30 seconds"
        for refused in ("30s", "500ms", "5m"):
            with pytest.raises(ParamValidationError):
                params.get_param(name).resolve(refused)


def test_reconciliation_unpaused_waits_for_the_next_quarter_hour(dagbag) -> None:
    """Issue #48: the demo's first reconciliation ran at once when the demo unpaused the DAG,
    before the pipeline had loaded anything: its first scheduled run is the next quarter hour,
    never the one just past (its asset still triggers a run whenever the sink loads)."""
    from airflow.serialization.serialized_objects import DagSerialization
    from airflow.timetables.base import TimeRestriction

    reconciliation = dagbag.get_dag("reconciliation")
    # As the scheduler holds it: the serialized DAG's timetable.
    timetable = DagSerialization.from_dict(DagSerialization.to_dict(reconciliation)).timetable
    restriction = TimeRestriction(reconciliation.start_date, None, catchup=False)
    before = datetime.now(UTC)
    first = timetable.next_dagrun_info(last_automated_data_interval=None, restriction=restriction)
    assert first is not None and first.run_after > before
    assert first.run_after - before <= timedelta(minutes=15)
    assert (first.run_after.minute % 15, first.run_after.second) == (0, 0)
