"""The reconcile and repair jobs' command lines with Spark and the runs replaced at their seams
(``spark_session``, ``reconcile.run_once``/``repair_run``, the services check ``require``):
flags reach the run as options, the exit code is the verdict (0 passed, 1 not proven, 2 could
not finish), and a bad flag, an unknown run or a service not answering is refused before Spark
starts (the ledger is real, on SQLite)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from boardstream import database, reconcile
from boardstream.entrypoints import reconciliation
from boardstream.errors import ServiceUnreachableError, UnknownTopicError
from boardstream.reconcile import repair
from boardstream.reconcile.checks.spark_checks import ReconcileOptions
from boardstream.reconcile.run import ReconciliationError, RecordingError
from boardstream.spark import session


class Result:
    def __init__(self, passed: bool) -> None:
        self.passed = passed

    def summary(self) -> list[str]:
        return [f"reconciliation run 9: {'PASSED' if self.passed else 'FAILED'}", "  source 3"]


class Spark:
    class sparkContext:  # Spark's name
        levels: list[str] = []  # noqa: RUF012

        @classmethod
        def setLogLevel(cls, level: str) -> None:  # Spark's name
            cls.levels.append(level)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """What was started and run; ``outcome`` is what run_once returns (or raises)."""
    seen: dict[str, Any] = {
        "spark": [],
        "short_lived": [],
        "runs": [],
        "targets": [],
        "repairs": [],
        "required": [],
        "outcome": Result(True),
        "unreachable": None,
    }
    monkeypatch.setenv("BOARDSTREAM_VAR_DIR", str(tmp_path))

    def spark_session(_settings, name: str, short_lived: bool = False) -> type[Spark]:
        seen["spark"].append(name)
        seen["short_lived"].append(short_lived)
        return Spark

    def run_once(spark, _settings, run_by, join_cp, sink_cp, options, kind, target):
        seen["runs"].append((spark, run_by, join_cp, sink_cp, options, kind))
        seen["targets"].append(target)
        if isinstance(seen["outcome"], BaseException):
            raise seen["outcome"]
        return seen["outcome"]

    def repair_run(spark, _settings, run_id, join_mode, join_cp, target):
        seen["repairs"].append((spark, run_id, join_mode, join_cp))
        seen["targets"].append(target)
        return {"rejoined": 1_234, "table": 2}

    def require(_settings, job: str) -> None:
        seen["required"].append(job)
        if seen["unreachable"]:
            raise ServiceUnreachableError(seen["unreachable"])

    monkeypatch.setattr(session, "spark_session", spark_session)
    monkeypatch.setattr(reconciliation, "require", require)
    monkeypatch.setattr(reconcile, "run_once", run_once)
    monkeypatch.setattr(reconcile, "repair_run", repair_run)
    monkeypatch.setattr(Spark.sparkContext, "levels", [])
    return seen


def test_reconcile_flags_become_the_runs_options(calls, capsys) -> None:
    argv = [
        "--stall-after",
        "30m",
        "--unmatched-timeout",
        "5m",
        "--run-by",
        "airflow:r/1/t",
        "--join-checkpoint",
        "/cp/join",
        "--full",
    ]
    assert reconciliation.reconcile_main(argv) == 0
    assert calls["spark"] == ["reconcile"]
    assert calls["short_lived"] == [False]  # a full run's JVM keeps the optimizing compiler
    assert Spark.sparkContext.levels == ["WARN"]
    assert calls["runs"] == [
        (
            Spark,
            "airflow:r/1/t",
            "/cp/join",
            None,
            ReconcileOptions(stall_after_ms=1_800_000, unmatched_timeout_ms=300_000),
            "full",
        )
    ]
    assert capsys.readouterr().out == "reconciliation run 9: PASSED\n  source 3\n"


def test_a_run_that_cannot_record_itself_exits_2_with_one_line(calls, capsys) -> None:
    calls["outcome"] = RecordingError(
        database.engine("postgresql+psycopg2://u:secret@db/b"), "its verdict", OSError("gone"), 9
    )
    assert reconciliation.reconcile_main([]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "reconcile: error: reconciliation run 9: could not record its verdict in "
        "postgresql+psycopg2://u:***@db/b: OSError: gone; the next run closes it as interrupted\n"
    )


@pytest.mark.parametrize(
    ("main", "argv", "job"),
    [
        (reconciliation.reconcile_main, [], "reconcile"),
        (reconciliation.repair_main, ["--run", "7"], "board-detail-repair"),
    ],
)
def test_a_service_not_answering_is_one_line_and_exit_2_before_spark(
    main, argv, job, calls, capsys
) -> None:
    calls["unreachable"] = f"{job} not started: no Kafka broker answered at localhost:1"
    assert main(argv) == 2
    assert capsys.readouterr() == ("", f"{calls['unreachable']}\n")
    assert calls["required"] == [job]
    assert calls["spark"] == []


def test_reconcile_defaults(calls) -> None:
    assert reconciliation.reconcile_main([]) == 0
    ((_, run_by, join_cp, sink_cp, options, kind),) = calls["runs"]
    assert (run_by, join_cp, sink_cp, kind) == ("cli", None, None, "incremental")
    assert calls["short_lived"] == [True]  # C1 only: spark/jit.py
    assert options == ReconcileOptions(stall_after_ms=1_200_000, unmatched_timeout_ms=600_000)


def test_reconcile_takes_a_pipeline_on_its_declared_topics(calls) -> None:
    """No --pipeline: the shipped one on the settings' topics; --pipeline orders: orders' own
    topics, table and store."""
    assert reconciliation.reconcile_main([]) == 0
    assert reconciliation.reconcile_main(["--pipeline", "orders"]) == 0
    shipped, orders = calls["targets"]
    assert shipped.pipeline.name == "board_detail" and shipped.topics.stream == "board"
    assert (orders.pipeline.name, orders.topics.stream, orders.topics.joined) == (
        "orders",
        "orders",
        "orders-joined",
    )
    assert orders.table.table.name == "order_customer"


def test_a_run_not_proven_exits_1_and_one_that_could_not_finish_2(calls, capsys) -> None:
    calls["outcome"] = Result(False)
    assert reconciliation.reconcile_main([]) == 1
    assert capsys.readouterr().out.startswith("reconciliation run 9: FAILED\n")
    calls["outcome"] = ReconciliationError(9, "no broker")
    assert reconciliation.reconcile_main([]) == 2
    assert capsys.readouterr() == ("", "reconciliation run 9: ERRORED: no broker\n")
    # Before any run is recorded (its snapshot needs the topics): one line, no traceback.
    calls["outcome"] = UnknownTopicError("unknown topic(s) board on localhost:9092")
    assert reconciliation.reconcile_main([]) == 2
    assert capsys.readouterr() == (
        "",
        "reconcile: error: unknown topic(s) board on localhost:9092\n",
    )


@pytest.mark.parametrize(
    ("main", "argv", "message"),
    [
        (reconciliation.reconcile_main, ["--stall-after", "soon"], "argument --stall-after:"),
        (reconciliation.reconcile_main, ["--unmatched-timeout", "0s"], "must be > 0, got '0s'"),
        (
            reconciliation.reconcile_main,
            ["--pipeline", "nope"],
            "--pipeline nope: no pipeline 'nope'; declared: board_detail, orders",
        ),
        (reconciliation.repair_main, [], "the following arguments are required: --run"),
        (reconciliation.repair_main, ["--run", "0"], "argument --run: must be > 0, got 0"),
        (
            reconciliation.repair_main,
            ["--run", "1", "--join-mode", "newest"],
            "argument --join-mode: invalid choice: 'newest'",
        ),
        (
            reconciliation.repair_main,
            ["--run", "1", "--pipeline", "nope"],
            "--pipeline nope: no pipeline 'nope'; declared: board_detail, orders",
        ),
    ],
)
def test_bad_flags_exit_2_before_spark(main, argv, message, calls, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert calls["spark"] == []


def test_repairing_an_unknown_run_is_one_line_before_spark(calls, capsys) -> None:
    assert reconciliation.repair_main(["--run", "7"]) == 1
    assert capsys.readouterr() == (
        "",
        "repair: error: no reconciliation run 7 in board_detail_reconciliation_run\n",
    )
    assert calls["spark"] == []


def test_a_repair_then_reconciles_again(calls, monkeypatch, capsys) -> None:
    looked_up = []
    monkeypatch.setattr(
        repair, "stored_snapshot", lambda _engine, _runs, run: looked_up.append(run)
    )
    argv = ["--run", "7", "--join-mode", "as-of", "--join-checkpoint", "/cp/j", "--run-by", "me"]
    calls["outcome"] = Result(False)
    assert reconciliation.repair_main(argv) == 1
    assert looked_up == [7]
    assert calls["spark"] == ["repair"]
    assert calls["repairs"] == [(Spark, 7, "as-of", "/cp/j")]
    assert calls["runs"] == [(Spark, "me (after repair of run 7)", "/cp/j", None, None, "full")]
    assert capsys.readouterr().out == (
        "rejoined: 1,234, table: 2\nreconciliation run 9: FAILED\n  source 3\n"
    )
    calls["outcome"] = Result(True)
    assert reconciliation.repair_main(["--run", "7"]) == 0
    assert calls["repairs"][-1] == (Spark, 7, None, None)  # the declared mode
    assert {target.pipeline.name for target in calls["targets"]} == {"board_detail"}


def test_a_repair_of_a_declared_pipeline_looks_in_its_own_runs(calls, capsys) -> None:
    """``--pipeline orders``: orders' run ledger is asked for the run, before Spark starts."""
    assert reconciliation.repair_main(["--run", "4", "--pipeline", "orders"]) == 1
    assert capsys.readouterr().err == (
        "repair: error: no reconciliation run 4 in orders_reconciliation_run\n"
    )
    assert calls["spark"] == []


def test_a_refusal_waits_for_no_run_module() -> None:
    """The launcher's flag check and the jobs' mains up to their services check import none of
    the runs' modules: Great Expectations alone took 2.4 s to import, before every refusal."""
    heavy = ("great_expectations", "boardstream.reconcile.run", "boardstream.reconcile.repair")
    probe = (
        "import sys\n"
        "import boardstream.entrypoints.job_flags\n"
        f"print(sorted(name for name in {heavy!r} if name in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "[]\n"
