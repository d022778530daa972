"""What the "Pipeline health" page is given, as plain JSON-able data: each reconciliation run
with its status (older runs have only ``passed``), findings in the summary's order, its Data
Docs page only while it exists under the site, and the Airflow task that made it; the balance
chart oldest first; each stream's newest batch and rates; the compaction changes. The ledger
is replaced at ``ledger.recent_runs``; the tuning log is real, on SQLite."""

from __future__ import annotations

import json
from datetime import UTC, datetime
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
    data_docs_page,
    pipeline_health,
    stream_progress,
)
from boardstream.settings import Settings


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


def test_a_data_docs_page_is_linked_only_while_it_is_under_the_site(tmp_path: Path) -> None:
    root = tmp_path / "data_docs"
    page = root / "runs" / "7" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text("<html/>")
    outside = tmp_path / "elsewhere.html"
    outside.write_text("<html/>")
    assert data_docs_page(str(page), root) == "runs/7/index.html"
    assert data_docs_page(str(root / "runs" / "6" / "index.html"), root) is None  # deleted
    assert data_docs_page(str(outside), root) is None
    assert data_docs_page(str(page.parent), root) is None  # a directory is not a page
    assert data_docs_page(None, root) is None
    assert data_docs_page("", root) is None


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
        "issues": {
            "missing": {"count": 1, "examples": ["b7"]},
            "mismatched": {"count": 2, "examples": ["b1", "b2"]},
            "aa_also_older": {"count": 1, "examples": ["y"]},
            "zz_from_an_older_version": {"count": 1, "examples": ["x"]},
        },
        "data_docs": None,
        "airflow": ["reconciliation", "r9", "reconcile"],
    }
    assert list(_run(run, tmp_path)["issues"]) == [
        "missing",
        "mismatched",
        "aa_also_older",
        "zz_from_an_older_version",
    ]


def test_jsonable_turns_datetimes_and_tuples_into_json() -> None:
    value = {"at": datetime(2026, 1, 2, 3, 4, 5), "pair": (1, [2, (3,)]), "n": None}
    assert _jsonable(value) == {"at": "2026-01-02T03:04:05", "pair": [1, [2, [3]]], "n": None}
    json.dumps(_jsonable(value))


def write_progress(settings: Settings, query: str, rates: list[float]) -> None:
    settings.progress.mkdir(parents=True, exist_ok=True)
    lines = [
        {"query": query, "batch_id": i, "processed_rows_per_s": r, "sources": [{"x": 1}]}
        for i, r in enumerate(rates)
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (settings.progress / f"{query}.jsonl").write_text(text)


def test_streams_show_their_newest_batch_and_recent_rates(settings: Settings) -> None:
    write_progress(settings, "sink", [1.0, 2.0, 3.0])
    write_progress(settings, "join", [5.0])
    write_progress(settings, "idle", [])  # no batch yet: not shown
    (settings.progress / "notes.txt").write_text("not a progress file")
    assert stream_progress(settings, batches=2) == [
        {
            "query": "join",
            "batches": 1,
            "latest": {"query": "join", "batch_id": 0, "processed_rows_per_s": 5.0},
            "rows_per_s": [5.0],
        },
        {
            "query": "sink",
            "batches": 2,
            "latest": {"query": "sink", "batch_id": 2, "processed_rows_per_s": 3.0},
            "rows_per_s": [2.0, 3.0],
        },
    ]


def test_no_progress_directory_is_no_streams(settings: Settings) -> None:
    assert stream_progress(settings, batches=60) == []


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
        health.ledger, "recent_runs", lambda _engine, limit: asked.append(limit) or runs
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
    found = pipeline_health(settings, runs=3)
    assert asked == [3]
    assert [r["run_id"] for r in found["reconciliation_runs"]] == [4, 3, 2, 1]
    zeros = dict.fromkeys(
        ("read", "not_yet_read", "unmatched", "dead_lettered", "pending", "conflicting"), 0
    )
    assert found["chart"] == [  # finished runs with counts only, oldest first
        {
            "run_id": 1,
            "source": 5,
            "read": 0,
            "not_yet_read": 0,
            "joined": 4,
            "unmatched": 0,
            "dead_lettered": 0,
            "pending": 0,
            "missing": 1,
            "conflicting": 0,
        },
        {"run_id": 2, "source": 6, "joined": 6, "missing": 0, **zeros},
    ]
    assert [s["query"] for s in found["streams"]] == ["join"]
    (change,) = found["compaction_changes"]
    assert change["change_id"] == 1 and isinstance(change["applied_at"], str)
    json.dumps(found)  # all of it JSON-able
