"""The "Pipeline health" template's cells, rendered from what boardstream.entrypoints.health
gathers: the rows/s bars of every batch (one batch included) and timestamps that read, and stay,
as one."""

from __future__ import annotations

import json
import re
from pathlib import Path

from boardstream.entrypoints.health import stream_progress
from tests.fixtures import isolated_settings


def test_rows_per_s_bars_and_one_line_timestamps(airflow_home: Path, tmp_path: Path) -> None:
    from boardstream_airflow.ui.app import templates  # airflow_home: Airflow is configured

    settings = isolated_settings(tmp_path)
    settings.progress.mkdir(parents=True)
    batches = {"board-detail-join": [0.4], "board-detail-sink": [3.1, 1250.0]}
    for query, rates in batches.items():
        lines = [
            {
                "query": query,
                "batch_id": batch,
                "input_rows": 6,
                "processed_rows_per_s": rate,
                "batch_duration_ms": 1907,
                "max_offsets_behind_latest": 0,
                "state_rows": 2,
                "state_sst_bytes": 1497,
            }
            for batch, rate in enumerate(rates)
        ]
        (settings.progress / f"{query}.jsonl").write_text(
            "".join(json.dumps(line) + "\n" for line in lines)
        )
    run = {
        "run_id": 7,
        "status": "PASSED",
        "passed": True,
        "error": None,
        "finished_at": "2026-11-23T08:35:53.621456",
        "counts": {},
        "issues": {},
        "run_by": "cli",
        "airflow": None,
        "data_docs": None,
    }
    change = {
        "change_id": 3,
        "rolls_back": None,
        "applied_at": "2026-11-23T08:36:01.5+00:00",
        "settings": [],
        "waste_before": None,
        "waste_after": None,
    }
    page = templates.get_template("health.html").render(
        health={
            "reconciliation_runs": [run],
            "chart": [],
            "streams": stream_progress(settings, batches=60),
            "compaction_changes": [change],
        }
    )

    for query, rates in batches.items():
        row = page.split(f'<tr data-query="{query}">', 1)[1].split("</tr>", 1)[0]
        cell = row.split('data-field="rows-per-s">', 1)[1]
        titles = re.findall(r"<title>([^<]*)</title>", cell)
        assert titles == [f"{rate:,.1f} rows/s" for rate in rates]
    assert '<td class="text time" data-field="finished">2026-11-23 08:35:53</td>' in page
    assert '<td class="text time">2026-11-23 08:36:01</td>' in page
    assert "td.time { white-space: nowrap; }" in page
