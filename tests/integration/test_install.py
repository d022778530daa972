"""`boardstream` installs from its own metadata: a fresh venv given only ``.`` (the runtime lock
as constraints) gets a working console script and the package data, and no test or lint tool."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from boardstream.reconcile.evidence.data_docs import ASSETS
from boardstream.settings import PROJECT_ROOT

# What the installed package sees of its own data, from the fresh venv's interpreter.
PROBE = """
import importlib.util, json
from boardstream.logs import LOG4J2
from boardstream.reconcile.evidence.data_docs import ASSETS
print(json.dumps({
    "log4j2": str(LOG4J2),
    "log4j2_is_file": LOG4J2.is_file(),
    "assets": sorted(p.name for p in ASSETS.iterdir()),
    "pytest": importlib.util.find_spec("pytest") is not None,
}))
"""


def uv() -> str:
    """uv as bin/setup finds it: on PATH, else in ~/.local/bin."""
    return shutil.which("uv") or str(Path.home() / ".local" / "bin" / "uv")


def test_a_fresh_venv_gets_a_working_command_and_its_data(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    subprocess.run([uv(), "venv", "--quiet", "--python", "3.11", str(venv)], check=True)
    # Not --offline: bin/setup's `uv pip sync` caches the locked wheels but not the index pages
    # a resolution reads, so on a new machine an offline resolve fails (seen 2026-11-25); the
    # registry is reachable wherever bin/setup ran, and the wheels still come from the cache.
    subprocess.run(
        [
            uv(), "pip", "install", "--quiet", "--python", str(python),
            "--constraints", str(PROJECT_ROOT / "requirements.txt"),
            "--overrides", str(PROJECT_ROOT / "requirements-overrides.txt"),
            str(PROJECT_ROOT),
        ],
        check=True,
        timeout=600,
    )  # fmt: skip
    # Run from outside the checkout, so nothing is imported from the source tree.
    shown = subprocess.run(
        [str(venv / "bin" / "boardstream"), "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    for command in ("setup", "stack", "topics", "produce", "job", "reconcile"):
        assert f"    {command} " in shown.stdout, command
    probe = subprocess.run(
        [str(python), "-c", PROBE], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    installed = json.loads(probe.stdout)
    assert installed["log4j2"].startswith(str(venv)) and installed["log4j2_is_file"]
    assert installed["assets"] == sorted(p.name for p in ASSETS.iterdir())
    assert installed["pytest"] is False, "the runtime install pulled in a test tool"
