"""Compose v2, the ``docker compose`` CLI plugin, built from its Go module when absent: Debian's
``docker-compose`` package is Compose v1, whose loader differs from the one the compose file is
checked with (docs/SETUP.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from boardstream.entrypoints.compose.commands import NICE, log, run
from boardstream.settings import PROJECT_ROOT

COMPOSE_VERSION = "v2.40.3"
COMPOSE_MODULE = "github.com/docker/compose/v2"
PLUGIN_DIR = Path("/usr/local/lib/docker/cli-plugins")


def ensure_compose() -> None:
    found = run("docker", "compose", "version", check=False, capture=True)
    if found.returncode == 0:
        log(found.stdout.strip())
        return
    # The Go bin/setup chose (or installs): Debian's on PATH may be older than Compose asks.
    go = run(str(PROJECT_ROOT / "bin" / "setup-go"), capture=True).stdout.strip()
    log(f"building Compose {COMPOSE_VERSION} from its Go module")
    download = run(
        go, "mod", "download", "-json", f"{COMPOSE_MODULE}@{COMPOSE_VERSION}", capture=True
    )
    source = Path(json.loads(download.stdout)["Dir"])
    # Removed whatever the build does: a failed one left its copy of the source behind.
    with tempfile.TemporaryDirectory(prefix="bs-compose-src-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        # Built as the main module: its go.mod has exclude directives, which `go install
        # module@version` refuses.
        shutil.copytree(source, work / "src")
        for path in (work / "src").rglob("*"):
            path.chmod(path.stat().st_mode | 0o200)
        PLUGIN_DIR.mkdir(parents=True, exist_ok=True)
        ldflags = f"-s -w -X {COMPOSE_MODULE}/internal.Version={COMPOSE_VERSION}"
        subprocess.run(
            [
                *NICE,
                go,
                "build",
                "-trimpath",
                "-ldflags",
                ldflags,
                "-o",
                str(PLUGIN_DIR / "docker-compose"),
                "./cmd",
            ],
            cwd=work / "src",
            check=True,
            env={**os.environ, "GOFLAGS": "-mod=readonly -buildvcs=false"},
        )
    log(run("docker", "compose", "version", capture=True).stdout.strip())
