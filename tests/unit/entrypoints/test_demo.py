"""``boardstream demo``'s decisions with Airflow and the ledger replaced (the seams:
``AirflowStandalone``, ``AirflowApi``, ``RunLedger.recent_runs``): it needs a running Airflow; the
pipeline runs once the data is loaded (the run the scheduler queues on unpausing, else a
triggered one); it stops at the first failed run; the reconciliation is the one the sink's
Asset event queued, else a triggered one; the verdict is the ledger's. The printed balance's
order is pinned in tests/dags/test_vocabulary.py."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from boardstream.entrypoints import demo
from boardstream.reconcile.evidence.run_ledger import RunLedger
from boardstream.settings import Settings


class Process:
    def __init__(self, pid: int | None) -> None:
        self._pid = pid

    def pid(self) -> int | None:
        return self._pid


class Airflow:
    address = "http://localhost:8080"
    passwords_file = Path("/var/airflow/passwords.json")
    running = True

    def __init__(self, _settings: Settings) -> None:
        self.process = Process(123 if self.running else None)

    def password(self) -> str:
        return "secret"


class Api:
    """What the demo asks of Airflow's API, answered from class attributes a test sets."""

    paused = True
    unpaused_run: str | None = "scheduled__1"
    ahead: list[str] = []  # noqa: RUF012
    asset_run: str | None = "asset__1"
    failing: set[str] = set()  # noqa: RUF012
    made: list[Api] = []  # noqa: RUF012

    def __init__(self, address: str, user: str, password: str) -> None:
        self.calls: list[tuple[Any, ...]] = [("login", address, user, password)]
        Api.made.append(self)

    def wait_for_dag(self, dag_id: str) -> None:
        self.calls.append(("parsed?", dag_id))

    def is_paused(self, dag_id: str) -> bool:
        self.calls.append(("paused?", dag_id))
        return self.paused

    def unpause(self, dag_id: str) -> None:
        self.calls.append(("unpause", dag_id))

    def trigger(self, dag_id: str, conf: dict[str, Any] | None = None) -> str:
        self.calls.append(("trigger", dag_id, conf))
        return f"manual__{dag_id}"

    def run_started_by_unpausing(self, dag_id: str) -> str | None:
        self.calls.append(("unpause for a run", dag_id))
        return self.unpaused_run

    def active_runs(self, dag_id: str) -> list[str]:
        self.calls.append(("active", dag_id))
        return self.ahead

    def asset_triggered_run(self, dag_id: str, source_dag: str, source_run: str) -> str | None:
        self.calls.append(("asset run", dag_id, source_dag, source_run))
        return self.asset_run

    def wait(self, dag_id: str, run_id: str) -> str:
        self.calls.append(("wait", dag_id, run_id))
        return "failed" if dag_id in self.failing else "success"


def ledger_run(run_by: str, passed: bool = True, **counts: int) -> dict[str, Any]:
    return {
        "run_id": 5,
        "run_by": run_by,
        "passed": passed,
        "counts": counts or None,
        # Not in the summary's order: it is the printing that orders them.
        "issues": {
            "mismatched": (2, ["b1", "b2"]),
            "missing": (1, ["b7"]),
            "stalled": (1, ["board-detail-join"]),
            "extra": (1, ["x9"]),
        },
    }


RUN_BY = "airflow:reconciliation/asset__1/reconcile"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(var_dir=tmp_path)


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    ledger: list[dict[str, Any]] = [ledger_run(RUN_BY, source=3, read=3, joined=3)]
    monkeypatch.setattr(Airflow, "running", True)
    for name, value in (
        ("paused", True),
        ("unpaused_run", "scheduled__1"),
        ("ahead", []),
        ("asset_run", "asset__1"),
        ("failing", set()),
        ("made", []),
    ):
        monkeypatch.setattr(Api, name, value)
    monkeypatch.setattr(demo, "AirflowStandalone", Airflow)
    monkeypatch.setattr(demo, "AirflowApi", Api)
    monkeypatch.setattr(RunLedger, "recent_runs", lambda _self, _engine, limit: list(ledger))
    return ledger


def test_without_airflow_running_it_says_how_to_start_it(runs, settings, monkeypatch, capsys):
    monkeypatch.setattr(Airflow, "running", False)
    assert demo.run_demo(settings, {}) == 1
    assert capsys.readouterr().out == (
        "demo: Airflow is not running; start it with `boardstream stack up --airflow`\n"
    )
    assert Api.made == []


def test_a_paused_pipeline_runs_as_the_scheduler_queues_it_once_data_is_loaded(
    runs, settings, capsys
) -> None:
    assert demo.run_demo(settings, {"members": 5}) == 0
    (api,) = Api.made
    assert api.calls == [
        ("login", "http://localhost:8080", "admin", "secret"),
        ("parsed?", "demo_data"),
        ("parsed?", "board_detail_pipeline"),
        ("parsed?", "reconciliation"),
        ("paused?", "board_detail_pipeline"),
        ("unpause", "demo_data"),
        ("unpause", "reconciliation"),
        ("trigger", "demo_data", {"members": 5}),
        ("wait", "demo_data", "manual__demo_data"),
        ("unpause for a run", "board_detail_pipeline"),
        ("wait", "board_detail_pipeline", "scheduled__1"),
        ("asset run", "reconciliation", "board_detail_pipeline", "scheduled__1"),
        ("wait", "reconciliation", "asset__1"),
    ]
    out = capsys.readouterr().out
    assert out.startswith("\nreconciliation run 5: PASSED\n  source                  3\n")
    assert out.endswith(
        "\nUI: http://localhost:8080/plugin/pipeline-health (Pipeline health), DAGs at "
        "http://localhost:8080/dags\nlog in as 'admin' with the password in "
        "/var/airflow/passwords.json\n"
    )


def test_an_unpaused_pipeline_is_triggered_behind_the_run_ahead(
    runs, settings, monkeypatch, caplog
) -> None:
    monkeypatch.setattr(Api, "paused", False)
    monkeypatch.setattr(Api, "ahead", ["scheduled__0"])
    with caplog.at_level(logging.INFO, logger=demo.logger.name):
        assert demo.run_demo(settings, {}) == 0
    calls = Api.made[0].calls
    assert ("unpause", "board_detail_pipeline") not in calls
    assert not any(call[0] == "unpause for a run" for call in calls)
    assert ("trigger", "board_detail_pipeline", None) in calls
    assert ("wait", "board_detail_pipeline", "manual__board_detail_pipeline") in calls
    assert (
        "board_detail_pipeline (manual__board_detail_pipeline; triggered; it waits for "
        "scheduled__0 to finish first); waiting for it to finish: spark-submit runs the join, "
        "then the sink loads board_detail"
    ) in caplog.messages


def test_when_unpausing_queues_no_run_the_pipeline_is_triggered(
    runs, settings, monkeypatch, caplog
) -> None:
    monkeypatch.setattr(Api, "unpaused_run", None)
    with caplog.at_level(logging.INFO, logger=demo.logger.name):
        assert demo.run_demo(settings, {}) == 0
    assert ("trigger", "board_detail_pipeline", None) in Api.made[0].calls
    assert any("(manual__board_detail_pipeline; triggered);" in m for m in caplog.messages)


def test_a_failed_load_stops_the_demo(runs, settings, monkeypatch, capsys) -> None:
    monkeypatch.setattr(Api, "failing", {"demo_data"})
    assert demo.run_demo(settings, {}) == 1
    assert Api.made[0].calls[-1] == ("wait", "demo_data", "manual__demo_data")
    assert capsys.readouterr().out == (
        "demo: demo_data failed; its task logs are in the UI at http://localhost:8080\n"
    )


def test_a_failed_pipeline_stops_before_reconciliation(runs, settings, monkeypatch) -> None:
    monkeypatch.setattr(Api, "failing", {"board_detail_pipeline"})
    assert demo.run_demo(settings, {}) == 1
    assert Api.made[0].calls[-1] == ("wait", "board_detail_pipeline", "scheduled__1")


def test_without_an_asset_triggered_run_the_reconciliation_is_triggered(
    runs, settings, monkeypatch
) -> None:
    monkeypatch.setattr(Api, "asset_run", None)
    runs[0] = ledger_run("airflow:reconciliation/manual__reconciliation/reconcile", source=1)
    assert demo.run_demo(settings, {}) == 0
    assert Api.made[0].calls[-2:] == [
        ("trigger", "reconciliation", None),
        ("wait", "reconciliation", "manual__reconciliation"),
    ]


def test_a_failed_reconciliation_fails_the_demo(runs, settings) -> None:
    runs[0] = ledger_run(RUN_BY, passed=False, source=3)
    assert demo.run_demo(settings, {}) == 1


def test_a_run_missing_from_the_ledger_fails_the_demo(runs, settings, capsys) -> None:
    runs[0] = ledger_run("cli")
    assert demo._print_reconciliation(settings, RUN_BY) is False
    assert capsys.readouterr().out == f"demo: no reconciliation run by {RUN_BY} in the ledger\n"


def test_findings_outside_the_balance_and_pending_boards_are_explained(
    runs, settings, capsys
) -> None:
    runs[0] = ledger_run(RUN_BY, passed=False, source=4, pending=1_234)
    assert demo._print_reconciliation(settings, RUN_BY) is False
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "reconciliation run 5: FAILED"
    # After the balance, the findings outside it (missing is in it already), in summary order.
    assert lines[12:] == [
        "  extra: 1 (x9)",
        "  stalled: 1 (board-detail-join)",
        "  mismatched: 2 (b1, b2)",
        "  the 1,234 pending boards wait for their member: the join sends each to "
        "board-unmatched once it has waited the pipeline's unmatched_timeout (10m unless set); "
        "the reconciliation task log lists the oldest with their age",
    ]


def test_an_errored_run_prints_errored_and_its_error_not_counts(runs, settings, capsys) -> None:
    runs[0] = {
        **ledger_run(RUN_BY, passed=False),
        "status": "ERRORED",
        "error": "OutOfMemoryException: Out of Memory Error\nDuckDB's advice",
    }
    assert demo._print_reconciliation(settings, RUN_BY) is False
    assert capsys.readouterr().out == (
        "\nreconciliation run 5: ERRORED\n  OutOfMemoryException: Out of Memory Error\n"
    )


def test_a_run_without_counts_prints_zeros(runs, settings, capsys) -> None:
    runs[0] = ledger_run(RUN_BY)  # a run recorded before counts were
    assert demo._print_reconciliation(settings, RUN_BY) is True
    out = capsys.readouterr().out
    assert "  source                  0\n" in out
    assert "pending boards" not in out


def test_a_run_that_came_first_during_the_demo_is_named_with_why(
    runs, settings, monkeypatch, capsys
) -> None:
    """The ledger held run 3 before the demo; the schedule's quarter hour made run 4 while the
    data loaded; run 5 is the demo's: run 4 is named, run 3 is not."""
    scheduled = {**ledger_run("airflow:reconciliation/scheduled__q/reconcile"), "run_id": 4}
    runs[1:] = [scheduled, {**ledger_run("cli"), "run_id": 3}]
    demo_started = []
    monkeypatch.setattr(
        RunLedger,
        "recent_runs",
        lambda _self, _engine, limit: (
            list(runs) if demo_started else demo_started.append(1) or runs[2:]
        ),
    )
    assert demo.run_demo(settings, {}) == 0
    lines = capsys.readouterr().out.splitlines()
    named = [line for line in lines if "came first" in line]
    assert named == [
        "  (run 4 came first, by airflow:reconciliation/scheduled__q/reconcile: it began before "
        "the pipeline had loaded the demo's data, so it checked the topics as they were then; "
        "the 15-minute schedule can fall while the demo runs)",
    ]
    # After the run's own balance and findings, which keep their order (test_vocabulary.py).
    assert lines.index(named[0]) > lines.index("reconciliation run 5: PASSED") + len(demo.BALANCE)
