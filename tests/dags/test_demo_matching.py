"""How ``bin/demo`` finds the reconciliation its pipeline run's Asset event queued: by the
event (``GET /api/v2/assets/events?source_dag_id=..&source_run_id=..``), not by time. The
payloads are checked against Airflow's own response model, so they have the API's shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from boardstream.entrypoints.airflow_api import triggered_run

PIPELINE_RUN = "manual__2026-11-23T08:34:02.118733+00:00"


def _run(dag_id: str, run_id: str, triggering: bool, start: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "dag_id": dag_id,
        "logical_date": None,
        "start_date": start,
        "end_date": None,
        "state": "queued",
        "data_interval_start": None,
        "data_interval_end": None,
        "partition_key": None,
        "triggering": triggering,
    }


def _events(*created: list[dict[str, Any]]) -> dict[str, Any]:
    """One event of boardstream://board_detail from the pipeline's sink per ``created`` list."""
    return {
        "asset_events": [
            {
                "id": 40 + i,
                "asset_id": 1,
                "uri": "boardstream://board_detail",
                "name": "boardstream://board_detail",
                "group": "asset",
                "extra": {},
                "source_task_id": "sink",
                "source_dag_id": "board_detail_pipeline",
                "source_run_id": PIPELINE_RUN,
                "source_map_index": -1,
                "created_dagruns": runs,
                # Stamped before the pipeline run's end_date (08:35:54.44): why time misleads.
                "timestamp": "2026-11-23T08:35:53.620000Z",
                "partition_key": None,
            }
            for i, runs in enumerate(created)
        ],
        "total_entries": len(created),
    }


@pytest.fixture
def valid(airflow_home: Path):
    """Asserts a payload is what Airflow's API serves for asset events."""
    from airflow.api_fastapi.core_api.datamodels.assets import AssetEventCollectionResponse

    return AssetEventCollectionResponse.model_validate


ASSET_RUN = "asset_triggered__2026-11-23T08:35:53.620000+00:00"


@pytest.mark.parametrize(
    ("created", "expected"),
    [
        ([[]], None),  # the event is there, the scheduler has not queued its run yet
        ([[_run("reconciliation", ASSET_RUN, True, "2026-11-23T08:35:55Z")]], ASSET_RUN),
        (  # another DAG on the same Asset
            [[_run("audit", "asset_triggered__x", True, "2026-11-23T08:35:55Z")]],
            None,
        ),
        (  # a run that consumed the event along with a later one that triggered it, and that one
            [
                [
                    _run("reconciliation", "asset_triggered__older", False, "2026-11-23T08:30Z"),
                    _run("audit", "asset_triggered__y", True, "2026-11-23T08:35:55Z"),
                    _run("reconciliation", ASSET_RUN, True, "2026-11-23T08:35:55Z"),
                ]
            ],
            ASSET_RUN,
        ),
        (  # only a consuming run: still the one this event fed
            [[_run("reconciliation", ASSET_RUN, False, "2026-11-23T08:35:55Z")]],
            ASSET_RUN,
        ),
    ],
)
def test_the_reconciliation_is_found_by_its_asset_event(valid, created, expected) -> None:
    payload = _events(*created)
    valid(payload)
    assert triggered_run(payload, "reconciliation") == expected
