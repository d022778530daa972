"""``boardstream repair --run N`` as a user types it: the console script, spark-submit and the
repair job, against the session's real broker and database."""

from __future__ import annotations

from tests.fixtures import cli


def test_repair_of_an_unknown_run_is_one_line(kafka) -> None:
    result = cli(kafka, "repair", "--run", "999", timeout=300)
    # spark-submit runs the job with its stderr joined to stdout: the job's output is one line.
    assert (result.returncode, result.stdout) == (
        1,
        "repair: error: no reconciliation run 999 in board_detail_reconciliation_run\n",
    )
    # stderr: the JVM's start-up lines only, under boardstream's log4j configuration (WARN).
    assert "Traceback" not in result.stderr
    assert "Using Spark's default log4j profile" not in result.stderr
    assert [line for line in result.stderr.splitlines() if " INFO " in line] == []
