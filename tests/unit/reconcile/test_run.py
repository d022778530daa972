"""What one run reports: the verdict (the exact checks and the GX suite must both pass), the
summary a person reads line by line, the error a run that cannot finish raises, and where the
jobs' checkpoints are by default. Running the checks needs Spark and Kafka: reconcile_once is
covered in tests/integration/test_reconcile.py and tests/adversarial/test_liveness.py."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from boardstream.errors import BoardstreamError
from boardstream.joins.topics import Deployed
from boardstream.pipelines import shipped as shipped_pipeline
from boardstream.reconcile.checks.spark_checks import (
    BALANCE,
    COUNTS,
    FINDINGS,
    WITH_IDS,
    Finding,
    Reconciliation,
)
from boardstream.reconcile.evidence.expectations import ExpectationOutcome, ValidationReport
from boardstream.reconcile.run import LISTED, ReconciliationError, RunResult, checkpoints
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import Settings

CLASSES = {
    "source": 1_234_567,
    "read": 1_200_000,
    "not_yet_read": 34_567,
    "joined": 1_100_000,
    "unmatched": 59_990,
    "dead_lettered": 40_000,
    "pending": 8,
    "missing": 2,
}
ROW_COUNT_OK = ExpectationOutcome("expect_table_row_count_to_equal", "missing", True, "0")
ROW_COUNT_FAILED = ExpectationOutcome(
    "expect_table_row_count_to_equal", "board_detail", False, "1099998"
)


def _reconciliation(
    counts: dict[str, int], findings: dict[str, Finding], waiting: list[str]
) -> Reconciliation:
    return Reconciliation(
        dict.fromkeys((*COUNTS, *FINDINGS), 0) | counts,
        {kind: Finding(0, []) for kind in WITH_IDS} | findings,
        {0: dict.fromkeys(BALANCE, 0) | {k: v for k, v in counts.items() if k in BALANCE}},
        pd.DataFrame(),
        waiting,
    )


def _validation(*outcomes: ExpectationOutcome, index: Path | None = None) -> ValidationReport:
    return ValidationReport(all(o.success for o in outcomes), list(outcomes), index)


def test_a_run_passes_only_when_the_checks_and_the_suite_both_pass() -> None:
    clean = _reconciliation({}, {}, [])
    lost = _reconciliation({"missing": 1}, {"missing": Finding(1, ["b1"])}, [])
    assert RunResult(1, clean, _validation(ROW_COUNT_OK)).passed is True
    assert RunResult(1, clean, _validation(ROW_COUNT_FAILED)).passed is False
    assert RunResult(1, lost, _validation(ROW_COUNT_OK)).passed is False


def test_the_summary_of_a_failed_run() -> None:
    reconciliation = _reconciliation(
        {**CLASSES, "expected_table_rows": 1_099_999, "topic_replays": 1, "sink_dead_lettered": 1},
        {
            "missing": Finding(2, ["b1", "b2"]),
            "topic_replays": Finding(1, ["b5"]),
            "sink_dead_lettered": Finding(1, ["b6"]),
            "pending": Finding(8, ["b7", "b8"]),  # counted, its ids not listed
            "not_yet_read": Finding(34_567, ["b9"]),
        },
        ["b7: waiting 9m, times out in 1m", "b8: waiting 8m, times out in 2m"],
    )
    validation = _validation(ROW_COUNT_OK, ROW_COUNT_FAILED, index=Path("/docs/run-7/index.html"))
    assert RunResult(7, reconciliation, validation).summary() == [
        "reconciliation run 7 (full): FAILED",
        "  source                  1,234,567",
        "  read                    1,200,000",
        "  not_yet_read               34,567",
        "  joined                  1,100,000",
        "  unmatched                  59,990",
        "  dead_lettered              40,000",
        "  pending                         8",
        "  missing                         2",
        "  expired_unseen                  0",
        "  conflicting                     0",
        "  extra                           0",
        "  altered_output                  0",
        "  unbalanced                      0",
        "  stalled                         0",
        "  overdue_pending                 0",
        "  stuck_pending                   0",
        "  referential                     0",
        "  duplicates                      0",
        "  missing_in_table                0",
        "  extra_in_table                  0",
        "  mismatched                      0",
        "  stale_in_table                  0",
        "  moved_partition                 0",
        "  type_mismatch                   0",
        "  expired_evidence                0",
        "  source_expired                  0",
        "  topic_replays                   1",
        "  unverifiable_in_table           0",
        "  superseded                      0",
        "  expected_table_rows     1,099,999",
        "  not_yet_loaded                  0",
        "  loaded_ahead                    0",
        "  sink_dead_lettered              1",
        "  board[0]: source 1,234,567 = joined 1,100,000 + unmatched 59,990 + dead-lettered "
        "40,000 + pending 8 + missing 2 + conflicting 0 + not yet read 34,567",
        "  missing: b1, b2",
        "  topic_replays: b5",
        "  sink_dead_lettered: b6",
        "  pending (oldest 2), waiting for their member:",
        "    b7: waiting 9m, times out in 1m",
        "    b8: waiting 8m, times out in 2m",
        "  expectation failed: expect_table_row_count_to_equal on board_detail (1099998)",
        "  data docs: /docs/run-7/index.html",
    ]


def test_the_summary_of_a_passed_run_lists_every_waiting_board_without_oldest() -> None:
    reconciliation = _reconciliation(
        {"source": 1, "read": 1, "pending": 1}, {"pending": Finding(1, ["b3"])}, ["b3: waiting"]
    )
    lines = RunResult(2, reconciliation, _validation(ROW_COUNT_OK)).summary()
    assert lines[0] == "reconciliation run 2 (full): PASSED"
    assert lines[-4:] == [
        "  sink_dead_lettered              0",
        "  board[0]: source 1 = joined 0 + unmatched 0 + dead-lettered 0 + pending 1 + missing 0 "
        "+ conflicting 0 + not yet read 0",
        "  pending, waiting for their member:",
        "    b3: waiting",
    ]


def test_the_summary_of_an_incremental_run_says_what_it_read_and_looked_at() -> None:
    reconciliation = _reconciliation({"source": 1, "read": 1, "joined": 1}, {}, [])
    covered = {"board": {"0": [10, 12], "1": [5, 5]}, "member": {"0": [3, 3]}}
    table_slice = {"table": "board_detail", "after": "b-10", "through": None, "rows": 1_234}
    lines = RunResult(
        3, reconciliation, _validation(ROW_COUNT_OK), "incremental", covered, table_slice
    ).summary()
    assert lines[:3] == [
        "reconciliation run 3 (incremental): PASSED",
        "  read board 0:[10, 12)",
        "  looked at 1,234 rows of board_detail, ids after 'b-10' to the last",
    ]


def test_the_listed_kinds_are_the_findings_and_the_sinks_dead_letters() -> None:
    assert (*FINDINGS, "sink_dead_lettered") == LISTED


def test_a_run_that_cannot_finish_names_its_run_and_error() -> None:
    error = ReconciliationError(12, "KafkaException: broker down")
    assert isinstance(error, BoardstreamError)
    assert str(error) == "reconciliation run 12: ERRORED: KafkaException: broker down"
    assert error.run_id == 12


def test_the_default_checkpoints_are_the_jobs_query_names(tmp_path: Path) -> None:
    settings = Settings(var_dir=tmp_path, checkpoint_root=tmp_path / "cp")
    shipped = ReconcileTarget.shipped(settings)
    assert checkpoints(settings, shipped) == (
        (tmp_path / "cp" / "board-detail-join").as_uri(),
        (tmp_path / "cp" / "board-detail-sink").as_uri(),
    )
    orders = ReconcileTarget.of(Deployed.declared(shipped_pipeline("orders")))
    assert checkpoints(settings, orders) == (
        (tmp_path / "cp" / "orders-join").as_uri(),
        (tmp_path / "cp" / "orders-sink").as_uri(),
    )
    assert checkpoints(settings, shipped, "hdfs://nn:8020/j/", tmp_path / "s") == (
        "hdfs://nn:8020/j",
        (tmp_path / "s").as_uri(),
    )
