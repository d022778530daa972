"""The "Pipeline health" template's cells, rendered from what boardstream.entrypoints.health
gathers: each stream's last batch, its age and lag against the SLO, marked OK or breaching; the
rows/s bars of every batch (one batch included); timestamps that read, and stay, as one; the
balance chart's data embedded for Chart.js, and no chart or script without a finished run."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from boardstream.entrypoints.health import stream_progress
from boardstream.spark.slo import StreamSlo
from boardstream.stream_progress import ProgressStore
from tests.fixtures import isolated_settings

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
SLO = StreamSlo(max_batch_age_s=1_200, max_lag=100)
RUN = {
    "run_id": 7,
    "status": "PASSED",
    "passed": True,
    "error": None,
    "finished_at": "2026-11-23T08:35:53.621456",
    "counts": {"source": 3, "joined": 3},
    "findings": {},
    "in_transit": {},
    "run_by": "cli",
    "airflow": None,
    "data_docs": None,
}

EVIDENCE = {
    "last_verdict_at": "2026-11-23T08:35:00+00:00",
    "error": None,
    "retention_ms": 7 * 24 * 3_600_000,
    "overdue": None,
    "risks": [],
}


def row(page: str, attribute: str) -> str:
    return page.split(f"<tr {attribute}>", 1)[1].split("</tr>", 1)[0]


def test_streams_against_the_slo_rows_per_s_bars_and_one_line_timestamps(
    airflow_home: Path, tmp_path: Path
) -> None:
    from boardstream_airflow.ui.app import templates  # airflow_home: Airflow is configured

    settings = isolated_settings(tmp_path)
    # The join's last batch ended 08:59:00 (1 min ago), 0 behind; the sink's 08:30:00 (30 min
    # ago: past 20), 250 behind (past 100).
    batches = {
        "board-detail-join": ("2026-11-23T08:58:58.093Z", [0.4], 0),
        "board-detail-sink": ("2026-11-23T08:29:58.093Z", [3.1, 1250.0], 250),
    }
    for query, (began, rates, lag) in batches.items():
        lines = [
            {
                "query": query,
                "batch_id": batch,
                "timestamp": began,
                "input_rows": 6,
                "processed_rows_per_s": rate,
                "batch_duration_ms": 1907,
                "max_offsets_behind_latest": lag,
                "state_rows": 2,
                "state_sst_bytes": 1497,
            }
            for batch, rate in enumerate(rates)
        ]
        ProgressStore(settings.database).append(lines)
    change = {
        "change_id": 3,
        "rolls_back": None,
        "applied_at": "2026-11-23T08:36:01.5+00:00",
        "settings": [],
        "waste_before": None,
        "waste_after": None,
    }
    chart = {"runs": [{"run_id": 7, "status": "PASSED", "finished_at": RUN["finished_at"]}]}
    page = templates.get_template("health.html").render(
        health={
            "reconciliation_runs": [RUN],
            "chart": {**chart, "series": [{"part": "joined", "counts": [3]}]},
            "streams": stream_progress(settings, 60, SLO, NOW),
            "live": {
                "board-detail-join": {
                    "wanted": True,
                    "running": True,
                    "healthy": True,
                    "reasons": [],
                    "application_id": "app-20261123085000-0001",
                    "spark_ui": "http://127.0.0.1:8090/app/?appId=app-20261123085000-0001",
                    "uptime_s": 600.0,
                    "restarts": 1,
                    "lag": 12,  # counted at the broker: the page shows it, not the 0 above
                    "lag_breached": False,
                }
            },
            "stream_slo": {"max_batch_age_s": 1_200, "max_lag": 100},
            "compaction_changes": [change],
            "evidence": EVIDENCE,
        }
    )

    cells = r'<td class="([^"]*)" data-field="(ended|age|lag)">([^<]*)</td>'
    slo = r'data-field="slo"[^>]*>([^<]*)</span>'
    join = row(page, 'data-query="board-detail-join"')
    sink = row(page, 'data-query="board-detail-sink"')
    assert re.findall(cells, join) == [
        ("text when", "ended", "2026-11-23 08:59:00"),
        ("time", "age", "1m"),
        ("", "lag", "12"),
    ]
    assert re.findall(slo, join) == ["OK"]
    live = r'data-field="live">(.*?)</td>'
    (join_live,) = re.findall(live, join, re.DOTALL)
    assert " ".join(re.sub(r"<[^>]+>", " ", join_live).split()) == (
        "running app-20261123085000-0001 , up 10m, 1 restart"
    )
    assert 'href="http://127.0.0.1:8090/app/?appId=app-20261123085000-0001"' in join_live
    assert re.findall(live, sink, re.DOTALL) == [
        '<span class="quiet">not supervised</span>\n      '
    ]
    assert re.findall(cells, sink) == [
        ("text when", "ended", "2026-11-23 08:30:00"),
        ("time over", "age", "30m"),
        ("over", "lag", "250"),
    ]
    assert re.findall(slo, sink) == ["breaching"] and 'title="breaks: age; lag"' in sink
    assert "ended at most\n20m ago and left at most 100 offsets behind" in page
    for query, (_, rates, _) in batches.items():
        cell = row(page, f'data-query="{query}"').split('data-field="rows-per-s">', 1)[1]
        titles = re.findall(r"<title>([^<]*)</title>", cell)
        assert titles == [f"{rate:,.1f} rows/s" for rate in rates]

    assert '<div class="quiet" data-field="finished">2026-11-23 08:35:53</div>' in page
    assert '<td class="text time">2026-11-23 08:36:01</td>' in page
    assert "td.time { white-space: nowrap; }" in page
    embedded = page.split('<script type="application/json" id="balance-data">', 1)[1]
    assert json.loads(embedded.split("</script>", 1)[0])["runs"] == chart["runs"]
    assert '<script src="static/chartjs/chart.umd.min.js"></script>' in page

    empty = templates.get_template("health.html").render(health=quiet_health())
    assert "<canvas" not in empty and "<script" not in empty
    assert '<p id="streams" class="quiet">No stream progress yet' in empty


def quiet_health(**changes: object) -> dict[str, object]:
    """The page's data with no run, stream or change yet."""
    return {
        "reconciliation_runs": [],
        "chart": {"runs": [], "series": []},
        "streams": [],
        "live": {},
        "stream_slo": {"max_batch_age_s": 1_200, "max_lag": 100},
        "compaction_changes": [],
        "evidence": EVIDENCE,
    } | changes


def test_evidence_retention_overdue_expiry_risks_and_unknown(airflow_home: Path) -> None:
    """The outputs' retention and the newest verdict; a badge per risk and for an overdue
    reconciliation, only when there is one; the broker's error when it did not answer."""
    from boardstream_airflow.ui.app import templates  # airflow_home: Airflow is configured

    def evidence(**changes: object) -> str:
        health = quiet_health(evidence={**EVIDENCE, **changes})
        page = templates.get_template("health.html").render(health=health)
        section = page.split('<section id="evidence">', 1)[1].split("</section>", 1)[0]
        return " ".join(re.sub(r"<[^>]+>", " ", section.split("</h2>", 1)[1]).split())

    note = (
        "The output topics are reconciliation's evidence: each must keep its records at least "
        "as long as board does, and a reconciliation must reach a verdict within their "
        'retention (docs/LOCAL_STACK.md, "Topics and their retention").'
    )
    assert evidence() == (
        f"{note} Output records kept for 168h00m; the newest reconciliation verdict began "
        "2026-11-23 08:35:00."
    )
    assert evidence(retention_ms=None, last_verdict_at=None) == (
        f"{note} Output records kept forever (no age limit); no reconciliation has reached a "
        "verdict yet."
    )
    assert evidence(
        overdue="no reconciliation has reached a verdict for 170h", risks=["r1", "r2"]
    ) == (
        f"{note} Output records kept for 168h00m; the newest reconciliation verdict began "
        "2026-11-23 08:35:00. overdue no reconciliation has reached a verdict for 170h "
        "expiry risk r1 expiry risk r2"
    )
    assert evidence(error="no Kafka broker answered", retention_ms=None) == (
        f"{note} unknown no Kafka broker answered"
    )
