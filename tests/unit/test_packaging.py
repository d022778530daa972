"""The two locks pin one tree: the image's runtime lock is the dev lock without the extras;
the package data a wheel carries."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from boardstream.settings import PROJECT_ROOT

PIN = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+)", re.MULTILINE)


def pins(lock: Path) -> dict[str, str]:
    return dict(PIN.findall(lock.read_text()))


def test_the_runtime_lock_is_the_full_lock_less_the_tools() -> None:
    full = pins(PROJECT_ROOT / "requirements.lock")
    runtime = pins(PROJECT_ROOT / "requirements.txt")
    assert {name: full.get(name) for name in runtime} == runtime
    for tool in ("pytest", "pytest-timeout", "selenium", "hypothesis", "ruff"):
        assert tool in full and tool not in runtime, tool


def test_every_direct_pin_is_the_locked_one() -> None:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    full = pins(PROJECT_ROOT / "requirements.lock")
    for requirement in declared:
        name, version = requirement.split("==")
        assert full[name.lower()] == version, requirement
    assert "pyspark-client" not in full, "requirements-overrides.txt keeps it out"


def test_a_wheel_carries_the_shipped_pipeline_declarations() -> None:
    """Each shipped declaration matches the package data setuptools installs with the package:
    an installed boardstream finds them where BOARDSTREAM_PIPELINES_DIR defaults to."""
    from boardstream.pipelines import SHIPPED

    tool = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]
    patterns = tool["setuptools"]["package-data"]["boardstream.pipelines"]
    shipped = sorted(SHIPPED.iterdir())
    assert shipped and all(
        any(path.relative_to(SHIPPED.parent).match(pattern) for pattern in patterns)
        for path in shipped
    )
