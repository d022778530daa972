"""A live sink loads rows while a run reads: between the run's snapshot and its read of
``board_detail``, new boards and an update are joined and loaded. Their rows name records past
the snapshot's end, which the run does not read; they are ``loaded_ahead`` (the time-compressed
life test met them as 31 ``extra_in_table``), and the next run, whose snapshot holds those
records, checks them. A row naming a position at or past the end listed after the table was
read names no record: still ``extra_in_table`` (tests/adversarial/test_table_tampering.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from boardstream.reconcile import run
from boardstream.reconcile.evidence.run_ledger import FULL, INCREMENTAL
from boardstream.reconcile.reads import readers
from boardstream.reconcile.reads.snapshot import Snapshot
from tests.adversarial.world import NOW, board, execute, failures, reconcile_as
from tests.pipeline import Pipeline


def live(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch, ids: Iterator[str]) -> None:
    """Every snapshot the runs take is followed by a new board and an update of ``b1``, joined
    and loaded before the run reads anything: as a sink running beside the run loads them."""
    snapshot_of = run.take_snapshot

    def then_the_sink(*args: object) -> Snapshot:
        snapshot = snapshot_of(*args)
        new = next(ids)
        board(pipeline, new, 2, NOW + 100)
        board(pipeline, "b1", 1, NOW + 101, title=f"b1 beside {new}")
        pipeline.join()
        pipeline.sink()
        return snapshot

    monkeypatch.setattr(run, "take_snapshot", then_the_sink)


@pytest.mark.parametrize("kind", [FULL, INCREMENTAL])
def test_rows_loaded_past_the_snapshot_wait_for_the_next_run(
    fresh: Pipeline, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    live(fresh, monkeypatch, iter(["n1", "n2"]))
    with monkeypatch.context() as broken:
        # The broken variant: no end listed after the table's read, so nothing is in transit.
        broken.setattr(readers, "ends_now", lambda *_: {})
        first = reconcile_as(fresh, kind)
    assert failures(first) == {"extra_in_table": ["b1", "n1"]}, "\n".join(first.summary())

    second = reconcile_as(fresh, kind)  # n1 and the first update are in its snapshot now
    assert failures(second) == {}, "\n".join(second.summary())
    assert second.passed
    ahead = second.reconciliation.findings["loaded_ahead"]
    assert (ahead.count, ahead.examples) == (2, ["b1", "n2"])
    counts = second.reconciliation.counts
    assert (counts["joined"], counts["expected_table_rows"]) == (13, 10)

    monkeypatch.undo()
    third = reconcile_as(fresh, kind)
    assert third.passed, "\n".join(third.summary())
    counts = third.reconciliation.counts
    assert (counts["loaded_ahead"], counts["joined"], counts["expected_table_rows"]) == (0, 15, 12)


@pytest.mark.parametrize("kind", [FULL, INCREMENTAL])
def test_a_row_forged_ahead_of_the_run_is_caught_by_the_next(
    fresh: Pipeline, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """``loaded_ahead`` defers a row one run, never clears it: n1's row altered as soon as the
    sink loaded it passes as in transit, and the next run, which holds its record, finds it."""
    live(fresh, monkeypatch, iter(["n1"]))
    sinking = run.take_snapshot

    def then_forged(*args: object) -> Snapshot:
        snapshot = sinking(*args)
        execute(
            fresh.settings.database, "UPDATE board_detail SET title = 'x' WHERE board_id = 'n1'"
        )
        return snapshot

    monkeypatch.setattr(run, "take_snapshot", then_forged)
    first = reconcile_as(fresh, kind)
    assert failures(first) == {}, "\n".join(first.summary())
    assert first.reconciliation.findings["loaded_ahead"].examples == ["b1", "n1"]
    monkeypatch.undo()
    second = reconcile_as(fresh, kind)
    assert failures(second) == {"mismatched": ["n1"]}, "\n".join(second.summary())
