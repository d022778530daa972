"""``boardstream repair --run N`` as a user types it: the console script, spark-submit and the
repair job, against the session's real broker and database."""

from __future__ import annotations

from tests.fixtures import cli


def test_repair_of_an_unknown_run_is_one_line(kafka) -> None:
    result = cli(kafka, "repair", "--run", "999", timeout=300)
    # spark-submit runs the job with its stderr joined to stdout: the job's output is one line
    # (stderr holds only the JVM's own start-up lines).
    assert (result.returncode, result.stdout) == (
        1,
        "repair: error: no reconciliation run 999 in reconciliation_run\n",
    )
    assert "Traceback" not in result.stderr
