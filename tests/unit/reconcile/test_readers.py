"""Where a full run's checks run: in the driver up to a bound of records and rows."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa

from boardstream.reconcile.reads.readers import TableRead, held, in_process
from boardstream.reconcile.reads.snapshot import JobProgress, Snapshot
from boardstream.settings import Settings


def test_a_full_run_is_held_in_the_driver_up_to_the_limit_inclusive() -> None:
    """Records from each partition's earliest offset (0 where none is listed: a partition
    retention has not touched) to its latest, plus the table's rows."""
    snapshot = Snapshot(
        datetime(2026, 11, 29, tzinfo=UTC),
        {"board": {0: 5}},
        {"board": {0: 8, 1: 4}, "member": {0: 2}},
        JobProgress(0, {}),
        JobProgress(0, {}),
    )
    table = TableRead(pa.table({"board_id": ["a", "b"]}), [])
    assert snapshot.records() == 3 + 4 + 2
    assert held(snapshot, table) == 11
    limits = {
        limit: in_process(Settings(reconcile_in_process_max_records=limit), snapshot, table)
        for limit in (0, 10, 11)
    }
    assert limits == {0: False, 10: False, 11: True}
