"""bin/setup-go on a machine without Go (a fresh Debian bookworm container, the compose run's
stand-in base): it installs Debian's golang-go, whose 1.19 is too old, fetches the toolchain
tools/compose-check's go.mod asks for through the Go module proxy, and links it in as
/usr/local/go: the README's two commands need no Go installed by hand. Needs root and Docker
(bin/setup --docker), so long."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from boardstream.entrypoints.compose.engine import Engine
from boardstream.entrypoints.compose.standin_build import ensure_base_image
from boardstream.settings import PROJECT_ROOT

pytestmark = pytest.mark.long
BASE = "boardstream-standin/debian:bookworm"


def test_setup_go_installs_the_go_the_compose_checker_asks_for(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("the engine and the container need root: run the long tests as root")
    engine = Engine(tmp_path)
    engine.ensure()
    try:
        ensure_base_image("bookworm")
        script = (
            'bin/setup-go > /tmp/found && test "$(cat /tmp/found)" = /usr/local/go/bin/go'
            " && /usr/local/go/bin/go env GOVERSION && bin/setup-go"
        )
        result = subprocess.run(
            [
                *("docker", "run", "--rm", "-v", f"{PROJECT_ROOT}:/src:ro", "-w", "/src", BASE),
                *("bash", "-c", script),
            ],
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
    finally:
        engine.stop()
    assert result.returncode == 0, result.stderr
    # The version fetched, then a second run that finds it and fetches nothing.
    assert result.stdout.split() == ["go1.24.9", "/usr/local/go/bin/go"]
    assert "installing Debian's golang-go" in result.stderr
