"""The platform's database shared (#67): on SQLite, the embedded default, as on PostgreSQL, a
reconciliation started by hand while the join and the sink run continuously records its
verdict, and neither stream fails for it. Before, an incremental run held SQLite's one write
lock while it read the topics and the table, the sink's writes and the leases' renewals waited
past pysqlite's 5 s, and a run started beside a busy sink failed with "database is locked"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.faults.harness import JOIN_ARGS, SINK_ARGS, Scenario, Supervisor

SEED = 20261201


# SQLite, the embedded default, in CI; PostgreSQL, whose writers do not wait for one another,
# with --long (minutes each).
@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.long)])
def test_a_reconciliation_beside_a_running_join_and_sink_records_its_verdict(
    services, tmp_path: Path, database: str
) -> None:
    url = services.database_url
    if database == "sqlite":
        url = f"sqlite:///{tmp_path / 'boardstream.db'}"
    s = Scenario(
        f"reconcile beside the streams, {database}", services.settings, url, tmp_path, SEED
    )
    s.produce()
    streams = Supervisor(s, {"board-detail-join": JOIN_ARGS, "board-detail-sink": SINK_ARGS})
    try:
        streams.await_batches()
        runs = []
        for options in (["--full"], []):
            s.produce()  # the backlog again, as updates: the join and the sink busy meanwhile
            runs.append(s.reconcile(*options))
        assert streams.exits == [], [s.tail(job) for job, _ in streams.exits]
    finally:
        streams.stop()
    for run, kind in zip(runs, ("full", "incremental"), strict=True):
        out = run.stdout + run.stderr
        assert "database is locked" not in out
        assert re.search(rf"^reconciliation run \d+ \({kind}\): PASSED$", out, re.M), out[-3000:]
        assert run.returncode == 0
    for job in ("board-detail-join", "board-detail-sink"):
        assert "database is locked" not in s.log(job).read_text(errors="replace"), s.tail(job)
