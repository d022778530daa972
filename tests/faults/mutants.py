"""Do the suites catch what they guard against? Each mutant is a deliberately broken copy of the
code (the kind of bug a loader or a checker really gets); its scenario (the kill scenario for
the loaders, an adversarial test for the verdict) must fail on it.

    .venv/bin/python -m tests.faults.mutants            # every mutant, a few minutes each
    .venv/bin/python -m tests.faults.mutants --only plain-insert

A mutant is applied to a copy of the committed tree (``git archive HEAD``; the jar cache is
linked, not copied), never to this checkout, and its scenario runs there with that copy first on
``PYTHONPATH``. Exit 0 only when every mutant made the scenario fail on an assertion.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

from boardstream.settings import PROJECT_ROOT

SCENARIO = "tests/faults/test_process_kills.py"


@dataclass(frozen=True)
class Mutant:
    name: str
    bug: str
    edits: dict[str, list[tuple[str, str]]]  # file -> (original text, broken text)
    scenario: str = SCENARIO


MUTANTS = (
    Mutant(
        "plain-insert",
        "the sink appends rows (no primary key, plain INSERT) instead of upserting",
        {
            "boardstream/sink/table.py": [
                (
                    'sa.Column("board_id", sa.String(64), primary_key=True),',
                    'sa.Column("board_id", sa.String(64)),',
                ),
                (
                    "connection.execute(statement, rows[start : start + chunk])",
                    "connection.execute(sa.insert(board_detail), rows[start : start + chunk])",
                ),
            ]
        },
    ),
    Mutant(
        "commit-before-write",
        "a micro-batch returns (Spark commits its offsets) before its rows are written: they "
        "are held and written with the next batch",
        {
            "boardstream/sink/job.py": [
                (
                    'table.upsert(self.engine, [r for r in rows if r["valid"]])',
                    'held, self.held = getattr(self, "held", []), [r for r in rows if r["valid"]]'
                    "\n        table.upsert(self.engine, held)",
                ),
            ]
        },
    ),
    Mutant(
        "balance-ignores-conflicts",
        "a position held by two outcomes counts as accounted for (source = joined + dead, PASSED)",
        {
            "boardstream/reconcile/checks/positions.py": [
                (
                    "n_held > 1 OR joined_versions_differ AS conflicted",
                    "FALSE AS conflicted",
                )
            ]
        },
        "tests/adversarial/test_topic_tampering.py::test_dead_letter_for_a_joined_board",
    ),
    Mutant(
        "rows-checked-by-board-only",
        "a table row is compared with its board's newest record by content, not by the "
        "position it claims",
        {
            "boardstream/reconcile/checks/table_checks.py": [
                (
                    'for c in (*_POSITION, "digest"))]',
                    'for c in ("digest",))]',
                ),
            ]
        },
        "tests/adversarial/test_table_tampering.py::test_row_claiming_a_position_that_does_not_exist",
    ),
    Mutant(
        "newest-by-offset",
        "the sink keeps a board's record at the highest board-detail offset, not its newest "
        "version in board: an older version the join wrote later replaces the newer row",
        {
            "boardstream/sink/table.py": [
                (
                    'NEWEST_ORDER = ("board_partition", "board_offset", "detail_partition", '
                    '"detail_offset")',
                    'NEWEST_ORDER = ("detail_partition", "detail_offset")',
                )
            ]
        },
        "tests/adversarial/test_version_order.py::"
        "test_the_table_keeps_the_newer_version_written_first",
    ),
    Mutant(
        "no-liveness",
        "a stalled job is not a finding: its waiting boards are only not yet read",
        {
            "boardstream/reconcile/checks/spark_checks.py": [
                (
                    'found["stalled"] = Finding(len(stalls), stalls)',
                    'found["stalled"] = Finding(0, [])',
                )
            ]
        },
        "tests/adversarial/test_liveness.py::test_a_join_that_stopped_reading_is_stalled",
    ),
    Mutant(
        "no-late-worker-restart",
        "a query whose Python worker connected back late (a loaded machine) fails the job "
        "instead of restarting from its checkpoint",
        {
            "boardstream/spark/streaming.py": [
                ("LATE_WORKER_RESTARTS = 5", "LATE_WORKER_RESTARTS = 0")
            ]
        },
        "tests/faults/test_cpu_hog.py::"
        "test_table_count_restarts_a_query_whose_python_worker_connected_late",
    ),
    Mutant(
        "store-unfenced",
        "a reconciliation stores its ledger and verdict whatever became of its run and its lease "
        "meanwhile (frozen past both, closed by the next run)",
        {
            "boardstream/reconcile/run.py": [
                ("                ledger.hold_open(connection, run_id)\n", ""),
                ("                Leases.of(settings).fence(connection, held)\n", ""),
            ]
        },
        "tests/faults/test_reconcile_frozen.py",
    ),
)


def broken_copy(mutant: Mutant, into: Path) -> None:
    """The committed tree with ``mutant``'s edits; each original text must occur exactly once."""
    archive = subprocess.run(
        ["git", "archive", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    (into / "var").mkdir()
    (into / "var" / "jars").symlink_to(PROJECT_ROOT / "var" / "jars")
    for file, edits in mutant.edits.items():
        path = into / file
        text = path.read_text()
        for original, broken in edits:
            if text.count(original) != 1:
                raise SystemExit(f"mutant {mutant.name}: {file} no longer has {original!r}")
            text = text.replace(original, broken)
        path.write_text(text)


def run_scenario(mutant: Mutant) -> tuple[bool, str, float]:
    """(caught, the failing assertion, seconds)."""
    with tempfile.TemporaryDirectory(prefix=f"boardstream-mutant-{mutant.name}-") as tmp:
        tree = Path(tmp)
        broken_copy(mutant, tree)
        env = {**os.environ, "PYTHONPATH": str(tree)}
        began = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", mutant.scenario],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = time.monotonic() - began
    assertion = next(
        (line for line in done.stdout.splitlines() if line.startswith("E   ")), "(none)"
    )
    # Caught means the scenario failed on one of its checks, not that it could not run.
    caught = done.returncode == 1 and "AssertionError" in done.stdout
    return caught, assertion.strip(), elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=[m.name for m in MUTANTS], action="append")
    args = parser.parse_args()
    survivors = []
    for mutant in MUTANTS:
        if args.only and mutant.name not in args.only:
            continue
        print(f"mutant {mutant.name}: {mutant.bug}", flush=True)
        caught, assertion, elapsed = run_scenario(mutant)
        verdict = "caught" if caught else "SURVIVED"
        print(f"  {verdict} in {elapsed:.0f} s: {assertion}", flush=True)
        if not caught:
            survivors.append(mutant.name)
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
