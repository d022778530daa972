"""The package's import rules (pyproject.toml's ``[tool.importlinter]``), held by import-linter:
the core imports no Airflow, the DAGs, jobs and plugin reach reconciliation through its front
door, and no package or module imports itself through its siblings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(cwd: Path, *paths: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` in ``cwd`` (its config there), the packages found on ``paths``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(path) for path in paths)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_projects_import_rules_hold() -> None:
    result = lint_imports(ROOT, ROOT, ROOT / "plugins")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 3 kept, 0 broken." in result.stdout


def test_a_cycle_kept_for_the_type_checker_is_found(tmp_path: Path) -> None:
    """The broken variant: checks imports baseline's Records, baseline imports checks' inputs
    behind ``if TYPE_CHECKING`` (as the two did before the rooms)."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "checks.py").write_text("from pkg.baseline import Records\n")
    (package / "baseline.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from pkg.checks import CheckInputs\n"
    )
    (tmp_path / ".importlinter").write_text(
        "[importlinter]\nroot_package = pkg\n\n[importlinter:contract:acyclic]\n"
        "name = No cycles\ntype = acyclic_siblings\nancestors = pkg\n"
    )
    result = lint_imports(tmp_path, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "No cycles BROKEN" in result.stdout
    assert "No cycles are allowed in pkg." in result.stdout
