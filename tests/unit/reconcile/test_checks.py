"""The pure side of the exact checks: the options' validation, the vocabulary's classes, and what
a finished :class:`Reconciliation` says (verdict, difference sets, the balance as equations and
the partitions whose classes do not add up). The Spark frames themselves are checked against a
real stack in tests/integration/test_reconcile.py and tests/adversarial."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from boardstream.reconcile.checks.spark_checks import (
    BALANCE,
    COUNTS,
    EXAMPLES,
    FAILING,
    FINDINGS,
    REPORTED,
    WITH_IDS,
    Finding,
    ReconcileOptions,
    Reconciliation,
    _unbalanced,
    join_mode,
)
from boardstream.spark.checkpoint_files import CheckpointFiles
from boardstream.spark.checkpoint_guard import record_identity


def _reconciliation(
    findings: dict[str, Finding] | None = None,
    counts: dict[str, int] | None = None,
    balance: dict[int, dict[str, int]] | None = None,
) -> Reconciliation:
    """A finished run: every kind present, none found unless given."""
    found = {kind: Finding(0, []) for kind in WITH_IDS} | (findings or {})
    every = dict.fromkeys((*COUNTS, *FINDINGS), 0) | (counts or {})
    return Reconciliation(every, found, balance or {}, pd.DataFrame())


def _classes(**values: int) -> dict[str, int]:
    return dict.fromkeys(BALANCE, 0) | values


def test_the_kinds_are_the_documented_ones_in_their_order() -> None:
    assert BALANCE == (
        "source",
        "read",
        "not_yet_read",
        "joined",
        "unmatched",
        "dead_lettered",
        "pending",
        "missing",
        "expired_unseen",
        "conflicting",
    )
    assert (
        *BALANCE,
        "expected_table_rows",
        "not_yet_loaded",
        "loaded_ahead",
        "sink_dead_lettered",
    ) == COUNTS
    # The findings' names and order: tests/unit/reconcile/test_vocabulary.py.
    assert (*FAILING, *REPORTED) == FINDINGS
    assert (
        *FINDINGS,
        "pending",
        "not_yet_read",
        "not_yet_loaded",
        "loaded_ahead",
        "sink_dead_lettered",
    ) == WITH_IDS


def test_default_options() -> None:
    options = ReconcileOptions()
    assert (options.stall_after_ms, options.unmatched_timeout_ms, options.examples) == (
        1_200_000,
        600_000,
        20,
    )
    assert EXAMPLES == 20


@pytest.mark.parametrize(
    "values",
    [{"stall_after_ms": -1}, {"unmatched_timeout_ms": -1}],
    ids=["stall", "timeout"],
)
def test_a_negative_duration_is_refused(values: dict[str, int]) -> None:
    with pytest.raises(ValueError) as refused:
        ReconcileOptions(**values)
    assert str(refused.value) == "the stall age and the unmatched timeout must not be negative"


def test_examples_must_be_positive_or_none() -> None:
    with pytest.raises(ValueError) as refused:
        ReconcileOptions(examples=0)
    assert str(refused.value) == "examples must be at least 1, got 0"
    zero = ReconcileOptions(stall_after_ms=0, unmatched_timeout_ms=0, examples=None)
    assert (zero.stall_after_ms, zero.unmatched_timeout_ms, zero.examples) == (0, 0, None)
    assert ReconcileOptions(examples=1).examples == 1


def test_a_run_with_only_reported_findings_or_waiting_boards_passes() -> None:
    reported = {kind: Finding(2, ["b1", "b2"]) for kind in REPORTED}
    waiting = {"pending": Finding(1, ["b3"]), "not_yet_read": Finding(4, ["b4"])}
    assert _reconciliation(reported | waiting).passed is True


@pytest.mark.parametrize("kind", FAILING)
def test_any_failing_finding_fails_the_run(kind: str) -> None:
    assert _reconciliation({kind: Finding(1, ["b9"])}).passed is False


def test_expected_table_rows_is_the_count() -> None:
    assert _reconciliation(counts={"expected_table_rows": 1_234}).expected_table_rows == 1_234


def test_difference_sets_are_the_failing_findings_ids() -> None:
    result = _reconciliation(
        {"missing": Finding(3, ["b1", "b2"]), "duplicates": Finding(1, ["b7"])}
    )
    sets = result.difference_sets()
    assert list(sets) == list(FAILING)
    assert sets["missing"]["board_id"].tolist() == ["b1", "b2"]
    assert sets["duplicates"]["board_id"].tolist() == ["b7"]
    assert list(sets["extra"].columns) == ["board_id"]
    assert len(sets["extra"]) == 0


def test_equations_state_each_partition_in_order_with_thousands_separators() -> None:
    balance = {
        1: _classes(source=3, read=3, joined=3),
        0: _classes(
            source=12_345,
            read=12_000,
            not_yet_read=345,
            joined=10_000,
            unmatched=1_500,
            dead_lettered=400,
            pending=90,
            missing=7,
            conflicting=3,
        ),
        2: _classes(source=4, read=4, joined=1, expired_unseen=3),
    }
    assert _reconciliation(balance=balance).equations() == [
        "board[0]: source 12,345 = joined 10,000 + unmatched 1,500 + dead-lettered 400 + "
        "pending 90 + missing 7 + conflicting 3 + not yet read 345",
        "board[1]: source 3 = joined 3 + unmatched 0 + dead-lettered 0 + pending 0 + missing 0 "
        "+ conflicting 0 + not yet read 0",
        # only where output records expired before any run read them
        "board[2]: source 4 = joined 1 + unmatched 0 + dead-lettered 0 + pending 0 + missing 0 "
        "+ expired unseen 3 + conflicting 0 + not yet read 0",
    ]


def test_a_balanced_partition_is_not_unbalanced() -> None:
    balance = {
        0: _classes(
            source=10,
            read=9,
            not_yet_read=1,
            joined=3,
            unmatched=2,
            dead_lettered=1,
            pending=1,
            missing=1,
            conflicting=1,
        ),
        1: _classes(),
    }
    assert _unbalanced(balance) == []


def test_partitions_whose_classes_do_not_add_up_are_named_in_order() -> None:
    balance = {
        # read 5, but only 4 classed
        2: _classes(source=5, read=5, joined=2, pending=1, conflicting=1),
        # read is classed, but source is not read + not yet read
        0: _classes(source=7, read=4, not_yet_read=2, joined=4),
        1: _classes(source=3, read=3, unmatched=3),
    }
    assert _unbalanced(balance) == [
        "board[0]: read 4 vs 4 classed",
        "board[2]: read 5 vs 4 classed",
    ]


def test_the_join_mode_is_the_checkpoints_recorded_one(
    tmp_path: Path, spark: SparkSession, checkpoint_files: CheckpointFiles
) -> None:
    identity = {"query": "board-detail-join", "join_mode": "as-of"}
    record_identity(checkpoint_files, (tmp_path / "join").as_uri(), identity)
    assert join_mode(spark, str(tmp_path / "join")) == "as-of"
    assert join_mode(spark, str(tmp_path / "never-started")) is None
