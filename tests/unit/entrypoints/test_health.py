"""What the "Pipeline health" page is given, as plain JSON-able data: each reconciliation run
with its status (older runs have only ``passed``), findings in the summary's order (counts only
for a passed run; boards in transit apart, never as findings), its Data Docs page only while it
exists under the site, and the Airflow task that made it; the balance chart's runs oldest first
and one series per part; each stream's newest batch against the SLO and its rates; the
compaction changes. The ledger is replaced at ``RUNS.recent_runs``; the tuning log is real,
on SQLite."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from boardstream import database
from boardstream.compaction import tuning_log
from boardstream.entrypoints import health
from boardstream.entrypoints.health import (
    _jsonable,
    _run,
    airflow_run,
    balance_chart,
    data_docs_file,
    data_docs_page,
    findings,
    in_transit,
    pipeline_health,
    stream_progress,
)
from boardstream.kafka.retention import Retention, StreamRetention, reconciliation_overdue
from boardstream.reconcile.evidence import docs_store
from boardstream.reconcile.evidence.data_docs import ASSETS
from boardstream.reconcile.evidence.run_ledger import RunLedger
from boardstream.settings import Settings
from boardstream.spark import checkpoint_lease
from boardstream.spark.slo import StreamSlo
from boardstream.stream_progress import ProgressStore
from tests.fixtures import isolated_settings
from tests.store import RUNS

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
HOUR_MS = 3_600_000
WEEK_MS = 7 * 24 * HOUR_MS
A_WEEK = Retention("delete", WEEK_MS, None)
KEPT_A_WEEK = StreamRetention("board", A_WEEK, {"board-detail": A_WEEK})
SLO = StreamSlo(max_batch_age_s=600, max_lag=10)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(var_dir=tmp_path)


@pytest.mark.parametrize(
    ("run_by", "expected"),
    [
        (
            "airflow:reconciliation/manual__2026-11-23T08:34:02.118733+00:00/reconcile",
            ("reconciliation", "manual__2026-11-23T08:34:02.118733+00:00", "reconcile"),
        ),
        # A repair's run_by carries a suffix; a task id in a group has a dot.
        (
            "airflow:repair/r1/group.repair (after repair of run 3)",
            ("repair", "r1", "group.repair"),
        ),
        ("cli", None),
        ("cli (after repair of run 3)", None),
        ("airflow:reconciliation/r1", None),  # no task
        ("xairflow:a/b/c", None),
    ],
)
def test_the_airflow_task_behind_a_run(run_by: str, expected: tuple | None) -> None:
    assert airflow_run(run_by) == expected


def test_a_data_docs_page_is_linked_only_while_its_site_is_stored() -> None:
    recorded = "/elsewhere/var/reconciliation/data_docs/reconciliation-7/index.html"
    assert data_docs_page(recorded, {"reconciliation-7"}) == "reconciliation-7/index.html"
    assert data_docs_page(recorded, {"reconciliation-8"}) is None  # dropped past the retention
    assert data_docs_page(None, {"reconciliation-7"}) is None
    assert data_docs_page("", {"reconciliation-7"}) is None


def test_a_data_docs_file_comes_from_the_database_and_its_assets_from_the_install(
    settings: Settings, tmp_path: Path
) -> None:
    site = tmp_path / "built" / "reconciliation-3"
    (site / "validations").mkdir(parents=True)
    (site / "index.html").write_text("<html>index</html>")
    (site / "validations" / "v.html").write_text("<html>v</html>")
    docs_store.save(settings.database, site, keep_runs=5)
    shutil.rmtree(site)  # the reconciling host's copy: another host's, as far as this one knows
    assert data_docs_file(settings, "reconciliation-3/index.html") == b"<html>index</html>"
    assert data_docs_file(settings, "reconciliation-3/") == b"<html>index</html>"
    assert data_docs_file(settings, "reconciliation-3/validations/v.html") == b"<html>v</html>"
    css = data_docs_file(settings, "reconciliation-3/static/vendor/bootstrap/bootstrap.min.css")
    assert css == ASSETS / "bootstrap" / "bootstrap.min.css"
    for missing in (
        "reconciliation-4/index.html",
        "reconciliation-3/../reconciliation-3/index.html",
        "reconciliation-3/static/vendor/../../../settings.py",
        "reconciliation-3/static/vendor/bootstrap",  # a folder
    ):
        assert data_docs_file(settings, missing) is None, missing


def ledger_run(run_id: int, **changes: Any) -> dict[str, Any]:
    run = {
        "run_id": run_id,
        "started_at": datetime(2026, 11, 23, 8, 0, tzinfo=UTC),
        "finished_at": datetime(2026, 11, 23, 8, 1, tzinfo=UTC),
        "passed": True,
        "status": "PASSED",
        "error": None,
        "run_by": "cli",
        "counts": {"source": run_id, "joined": run_id},
        "issues": {},
        "data_docs": None,
    }
    return {**run, **changes}


@pytest.mark.parametrize(
    ("status", "passed", "shown"),
    [
        ("ERRORED", False, "ERRORED"),
        (None, True, "PASSED"),  # recorded before the status column existed
        (None, False, "FAILED"),
        (None, None, "RUNNING"),
    ],
)
def test_a_runs_status(status, passed, shown, tmp_path: Path) -> None:
    assert _run(ledger_run(1, status=status, passed=passed), tmp_path)["status"] == shown


# Per topic and partition, the offsets [from, to) a run read; nothing new in board[1] and dlq.
COVERED = {
    "member": {"1": [40, 41]},
    "board": {"2": [0, 7], "1": [30, 30], "0": [1200, 1500]},
    "board-dlq": {"0": [5, 5]},
}


def test_a_run_as_the_page_gets_it(tmp_path: Path) -> None:
    issues = {
        "zz_from_an_older_version": (1, ["x"]),
        "mismatched": (2, ["b1", "b2"]),
        "aa_also_older": (1, ["y"]),
        "missing": (1, ("b7",)),
    }
    run = ledger_run(
        4,
        counts=None,
        issues=issues,
        run_by="airflow:reconciliation/r9/reconcile",
        finished_at=None,
    )
    run.pop("error")  # older rows have no error either
    assert _run(run, tmp_path) == {
        "run_id": 4,
        "started_at": "2026-11-23T08:00:00+00:00",
        "finished_at": None,
        "passed": True,
        "run_by": "airflow:reconciliation/r9/reconcile",
        "status": "PASSED",
        "error": None,
        "counts": {},
        "findings": {
            "missing": {"count": 1, "examples": []},
            "mismatched": {"count": 2, "examples": []},
            "aa_also_older": {"count": 1, "examples": []},
            "zz_from_an_older_version": {"count": 1, "examples": []},
        },
        "in_transit": {},
        "data_docs": None,
        "airflow": ["reconciliation", "r9", "reconcile"],
        "kind": "full",  # recorded before #22: a full run of no recorded range
        "covered": None,
        "table_slice": None,
    }
    table_slice = {"table": "board_detail", "after": "b-10", "through": "b-99", "rows": 500_000}
    incremental = _run(
        {**run, "kind": "incremental", "covered": COVERED, "table_slice": table_slice}, tmp_path
    )
    assert (incremental["kind"], incremental["covered"], incremental["table_slice"]) == (
        "incremental",
        "board 0:[1,200, 1,500) 2:[0, 7); member 1:[40, 41)",
        "500,000 rows of board_detail, ids after 'b-10' through 'b-99'",
    )
    failed = _run({**run, "passed": False, "status": "FAILED"}, tmp_path)["findings"]
    assert failed == {
        "missing": {"count": 1, "examples": ["b7"]},
        "mismatched": {"count": 2, "examples": ["b1", "b2"]},
        "aa_also_older": {"count": 1, "examples": ["y"]},
        "zz_from_an_older_version": {"count": 1, "examples": ["x"]},
    }
    assert list(failed) == ["missing", "mismatched", "aa_also_older", "zz_from_an_older_version"]


# As finish_run stores them: every kind with ids, zero counts included.
ISSUES = {
    "pending": (2, ["b5", "b6"]),
    "not_yet_read": (0, []),
    "not_yet_loaded": (1, ["b4"]),
    "topic_replays": (1, ["b3"]),
    "source_expired": (0, []),
    "sink_dead_lettered": (1, ["b9"]),
}


def test_a_passed_runs_findings_are_counts_and_boards_in_transit_are_not_findings() -> None:
    assert findings(ISSUES, passed=True) == {
        "topic_replays": {"count": 1, "examples": []},
        "sink_dead_lettered": {"count": 1, "examples": []},
    }
    assert in_transit(ISSUES) == {"pending": 2, "not_yet_loaded": 1}


def test_a_failed_runs_findings_keep_their_ids() -> None:
    issues = {**ISSUES, "missing": (1, ["b1"])}
    assert findings(issues, passed=False) == {
        "missing": {"count": 1, "examples": ["b1"]},
        "topic_replays": {"count": 1, "examples": ["b3"]},
        "sink_dead_lettered": {"count": 1, "examples": ["b9"]},
    }
    assert in_transit(issues) == {"pending": 2, "not_yet_loaded": 1}
    assert in_transit({}) == {}


def test_jsonable_turns_datetimes_and_tuples_into_json() -> None:
    value = {"at": datetime(2026, 1, 2, 3, 4, 5), "pair": (1, [2, (3,)]), "n": None}
    assert _jsonable(value) == {"at": "2026-01-02T03:04:05", "pair": [1, [2, [3]]], "n": None}
    json.dumps(_jsonable(value))


def write_progress(settings: Settings, query: str, rates: list[float], lag: int = 0) -> None:
    """One batch per rate, a minute apart, the newest ending at NOW (each takes a second)."""
    lines = [
        {
            "query": query,
            "batch_id": i,
            "timestamp": (NOW - timedelta(minutes=len(rates) - 1 - i, seconds=1)).isoformat(),
            "batch_duration_ms": 1_000,
            "processed_rows_per_s": r,
            "max_offsets_behind_latest": lag,
            "sources": [{"x": 1}],
        }
        for i, r in enumerate(rates)
    ]
    ProgressStore(settings.database).append(lines)


def test_streams_show_their_newest_batch_against_the_slo_and_recent_rates(
    settings: Settings,
) -> None:
    write_progress(settings, "sink", [1.0, 2.0, 3.0])
    write_progress(settings, "join", [5.0], lag=11)
    write_progress(settings, "idle", [])  # no batch yet: not shown
    later = NOW + timedelta(seconds=601)
    join, sink = stream_progress(settings, 2, SLO, later)
    assert join == {
        "query": "join",
        "batches": 1,
        "latest": {
            "query": "join",
            "batch_id": 0,
            "timestamp": "2026-11-25T11:59:59+00:00",
            "batch_duration_ms": 1_000,
            "processed_rows_per_s": 5.0,
            "max_offsets_behind_latest": 11,
        },
        "slo": {
            "ended_at": "2026-11-25T12:00:00+00:00",
            "age_s": 601.0,
            "lag": 11,
            "breaches": ["age", "lag"],
            "ok": False,
        },
        "rows_per_s": [5.0],
    }
    assert (sink["query"], sink["batches"], sink["latest"]["batch_id"]) == ("sink", 2, 2)
    assert sink["rows_per_s"] == [2.0, 3.0]
    assert sink["slo"]["breaches"] == ["age"]
    assert stream_progress(settings, 2, SLO, NOW)[1]["slo"]["ok"] is True


def test_a_real_time_query_is_held_to_the_slo_plus_its_interval(settings: Settings) -> None:
    """As the lease of its checkpoint says its last driver ran it (held or not)."""
    write_progress(settings, "board-detail-join", [5.0])
    later = NOW + timedelta(seconds=601)
    assert stream_progress(settings, 1, SLO, later)[0]["slo"]["breaches"] == ["age"]
    details = {"trigger": "real-time", "interval": "5 minutes"}
    with checkpoint_lease.hold(settings, settings.checkpoint("board-detail-join"), "join", details):
        assert stream_progress(settings, 1, SLO, later)[0]["slo"]["ok"] is True
    assert stream_progress(settings, 1, SLO, later)[0]["slo"]["ok"] is True
    too_late = NOW + timedelta(seconds=901)
    assert stream_progress(settings, 1, SLO, too_late)[0]["slo"]["breaches"] == ["age"]


def test_no_progress_is_no_streams(settings: Settings) -> None:
    assert stream_progress(settings, 60, SLO, NOW) == []


def test_the_balance_chart_has_a_series_per_part_and_the_runs_oldest_first() -> None:
    def page_run(run_id: int, status: str, **counts: int) -> dict[str, Any]:
        finished = f"2026-11-25T0{run_id}:00:00+00:00" if status != "RUNNING" else None
        return {"run_id": run_id, "status": status, "finished_at": finished, "counts": counts}

    runs = [  # newest first, as the page lists them
        page_run(4, "RUNNING", source=9),
        page_run(3, "ERRORED"),  # no counts
        page_run(2, "FAILED", source=7, joined=3, unmatched=1, pending=1, missing=2),
        page_run(1, "PASSED", source=6, not_yet_read=1, joined=4, dead_lettered=1),
    ]
    assert balance_chart(runs) == {
        "runs": [
            {"run_id": 1, "status": "PASSED", "finished_at": "2026-11-25T01:00:00+00:00"},
            {"run_id": 2, "status": "FAILED", "finished_at": "2026-11-25T02:00:00+00:00"},
        ],
        "series": [  # the balance's order; conflicting: no run has any
            {"part": "not_yet_read", "counts": [1, 0]},
            {"part": "joined", "counts": [4, 3]},
            {"part": "unmatched", "counts": [0, 1]},
            {"part": "dead_lettered", "counts": [1, 0]},
            {"part": "pending", "counts": [0, 1]},
            {"part": "missing", "counts": [0, 2]},
        ],
    }
    assert balance_chart(runs[:2]) == {
        "runs": [],
        "series": [
            {"part": part, "counts": []}
            for part in ("not_yet_read", "joined", "unmatched", "dead_lettered", "pending")
        ],
    }


def test_pipeline_health_gathers_runs_chart_streams_and_changes(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = []
    runs = [
        ledger_run(4, status="RUNNING", passed=None, finished_at=None, counts={"source": 9}),
        ledger_run(3, status="ERRORED", passed=False, counts=None),
        ledger_run(2, counts={"source": 6, "joined": 6}),
        ledger_run(1, counts={"source": 5, "joined": 4, "missing": 1}),
    ]
    monkeypatch.setattr(
        RunLedger, "recent_runs", lambda _self, _engine, limit: asked.append(limit) or runs
    )
    engine = database.engine(settings.database)
    tuning_log.create(engine)
    row = {
        "topic": "member",
        "setting": "segment.ms",
        "old_value": None,
        "old_is_default": True,
        "new_value": "60000",
        "reason": "r",
        "run_by": "cli",
    }
    tuning_log.record(engine, [row], (10, 5, 0.5))
    write_progress(settings, "join", [7.0])
    monkeypatch.setattr(health, "read_retention", lambda _admin, _settings: KEPT_A_WEEK)
    found = pipeline_health(settings.model_copy(update={"stream_max_lag": 5}), runs=3, now=NOW)
    assert asked == [3]
    assert [r["run_id"] for r in found["reconciliation_runs"]] == [4, 3, 2, 1]
    assert found["chart"] == balance_chart(found["reconciliation_runs"])
    assert [run["run_id"] for run in found["chart"]["runs"]] == [1, 2]
    assert found["stream_slo"] == {"max_batch_age_s": 1_200, "max_lag": 5}
    assert [(s["query"], s["slo"]["ok"]) for s in found["streams"]] == [("join", True)]
    assert found["live"] == {}  # no stream was ever supervised here
    (change,) = found["compaction_changes"]
    assert change["change_id"] == 1 and isinstance(change["applied_at"], str)
    # The ledger here holds no run (recent_runs is replaced): no verdict yet, nothing overdue.
    assert found["evidence"] == {
        "last_verdict_at": None,
        "error": None,
        "retention_ms": WEEK_MS,
        "overdue": None,
        "risks": [],
    }
    json.dumps(found)  # all of it JSON-able


def test_the_newest_verdict_is_the_newest_passed_or_failed_run_however_many_errored_since(
    settings: Settings,
) -> None:
    engine = database.engine(settings.database)
    assert RUNS.last_verdict_at(engine) is None  # no ledger yet
    first = RUNS.start_run(engine, {}, "cli")
    RUNS.finish_run(engine, first, False, {}, {}, None)
    second = RUNS.start_run(engine, {}, "cli")
    RUNS.finish_run(engine, second, True, {}, {}, None)
    RUNS.error_run(engine, RUNS.start_run(engine, {}, "cli"), "broker gone")
    RUNS.start_run(engine, {}, "cli")  # still running
    began = RUNS.run(engine, second)["started_at"]
    assert RUNS.last_verdict_at(engine) == began.replace(tzinfo=UTC)  # SQLite keeps no zone
    # A run recorded before the status column existed counts by ``passed``.
    with engine.begin() as connection:
        connection.execute(
            RUNS.run_table.update()
            .where(RUNS.run_table.c.run_id == first)
            .values(status=None, started_at=began + timedelta(seconds=1))
        )
    assert RUNS.last_verdict_at(engine) == (began + timedelta(seconds=1)).replace(tzinfo=UTC)


def test_evidence_says_when_reconciliation_is_overdue_and_which_outputs_may_expire_first(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    short = StreamRetention(
        "board",
        Retention("delete", WEEK_MS, None),
        {"board-detail": Retention("delete", HOUR_MS, 5)},
    )
    monkeypatch.setattr(health, "read_retention", lambda _admin, _settings: short)
    found = health.evidence(settings, NOW - timedelta(hours=2), NOW)
    assert found == {
        "last_verdict_at": "2026-11-25T10:00:00+00:00",
        "error": None,
        "retention_ms": HOUR_MS,
        "overdue": reconciliation_overdue(NOW - timedelta(hours=2), NOW, HOUR_MS),
        "risks": [str(risk) for risk in short.risks],
    }
    assert found["overdue"] and len(found["risks"]) == 2
    assert health.evidence(settings, NOW - timedelta(minutes=59), NOW)["overdue"] is None


def test_evidence_is_unknown_with_the_broker_down_and_the_page_waits_little(
    tmp_path: Path,
) -> None:
    down = isolated_settings(tmp_path, connect_timeout_s=30.0)
    found = health.evidence(down, NOW, NOW)
    assert found["error"].startswith(
        f"no Kafka broker answered at {down.bootstrap_servers} within 2s"
    )
    assert (found["retention_ms"], found["overdue"], found["risks"]) == (None, None, [])


def test_live_streams_are_the_supervised_ones_with_their_application_uptime_and_restarts(
    settings: Settings, tmp_path: Path
) -> None:
    """A driver holding the join's lease (this process, as a live driver holds it) after one
    restart; the sink stopped on request; a job no supervisor touched is not listed."""
    from boardstream.spark.checkpoint_lease import hold, holder
    from boardstream.supervision import register
    from boardstream.supervision.register import STOPPED, Start, StreamRecord

    events = "hdfs://nn:8020/spark-events"
    cluster = settings.model_copy(
        update={"spark_master": "spark://10.0.0.5:7077", "spark_event_log_dir": events}
    )
    since = int(NOW.timestamp() * 1000) - 90_000
    with register.locked(cluster, "board-detail-join"):
        register.write(
            cluster,
            "board-detail-join",
            StreamRecord(starts=(Start(since - 60_000, False, 1), Start(since, True, 2))),
        )
    with register.locked(cluster, "board-detail-sink"):
        register.write(
            cluster, "board-detail-sink", StreamRecord(STOPPED, (Start(1, False, 3),), 5)
        )
    join = cluster.checkpoint("board-detail-join")
    with hold(cluster, join, "board-detail-join", {"application_id": "app-9"}):
        driver = holder(cluster, join)
        assert driver is not None
        live = health.live_streams(
            cluster, datetime.fromtimestamp(driver.since_ms / 1000 + 30, UTC)
        )
    assert live == {
        "board-detail-join": {
            "wanted": True,
            "running": True,
            "healthy": True,
            "reasons": [],
            "application_id": "app-9",
            "spark_ui": f"http://10.0.0.5:{cluster.spark_master_ui_port}/app/?appId=app-9",
            "event_log": f"{events}/eventlog_v2_app-9",
            "uptime_s": 30.0,
            "restarts": 1,
            "lag": None,  # no broker here to count it at
            "lag_breached": False,
        },
        "board-detail-sink": {
            "wanted": False,
            "running": False,
            "healthy": True,
            "reasons": [],
            "application_id": None,
            "spark_ui": None,
            "event_log": None,
            "uptime_s": None,
            "restarts": 0,
            "lag": None,
            "lag_breached": False,
        },
    }
    assert health.spark_ui(settings, "app-9") is None  # local mode: no master UI
