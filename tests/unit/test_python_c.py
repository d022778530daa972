"""The package imports in a process whose ``__main__`` has no file (``python -c``, a REPL fed
on stdin, an embedding host such as a test runner's worker).

pyspark's Spark Connect check, run when Great Expectations imports ``pyspark.sql.connect``,
takes such a process for a doctest run and calls ``sys.exit(0)`` unless every Connect
dependency is installed: ``python -c "import boardstream.reconcile ..."`` printed nothing and
exited 0. zstandard was the one missing (pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys


def test_the_evidence_module_imports_under_python_c() -> None:
    code = "import boardstream.reconcile.evidence.expectations; print('imported')"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert (result.returncode, result.stdout) == (0, "imported\n"), result.stderr[-2000:]
