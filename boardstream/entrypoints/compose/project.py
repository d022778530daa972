"""The compose project ``boardstream``: docker-compose.yml with the run's ``.env``, brought up
with every healthcheck passing and taken down leaving the engine as it found it, so a run on a
shared engine is checked to clean up after itself (anonymous volumes included)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from boardstream.entrypoints.compose.commands import log, run
from boardstream.entrypoints.compose.env_file import read_env
from boardstream.settings import PROJECT_ROOT

COMPOSE_FILE = PROJECT_ROOT / "docker-compose.yml"
PROJECT = "boardstream"
KINDS = ("container", "network", "volume")


def _ids(kind: str, *filters: str) -> set[str]:
    return set(
        run(
            "docker",
            kind,
            "ls",
            *(["-a"] if kind == "container" else []),
            "-q",
            *filters,
            capture=True,
        ).stdout.split()
    )


def present() -> dict[str, set[str]]:
    """Every container, network and volume of the engine, by id: what `down -v` must
    leave as it was before `up` (anonymous volumes carry no project label)."""
    return {kind: _ids(kind) for kind in KINDS}


class Project:
    def __init__(self, env_file: Path) -> None:
        self.env_file = env_file
        self.before: dict[str, set[str]] = {}
        self.is_up = False

    def command(self) -> list[str]:
        return [
            "docker",
            "compose",
            "-f",
            str(COMPOSE_FILE),
            "--env-file",
            str(self.env_file),
            "-p",
            PROJECT,
        ]

    def compose(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return run(*self.command(), *args, **kwargs)

    def env(self) -> dict[str, str]:
        return read_env(self.env_file)

    def bring_up(self, build: bool) -> None:
        """``build`` false: the project image as built before (Compose builds it if absent)."""
        self.before = present()
        env = {"DOCKER_BUILDKIT": "0", "COMPOSE_BAKE": "false"}
        if build:
            self.compose("build", heavy=True, env=env)
        self.is_up = True
        result = self.compose("up", "-d", "--wait", "--wait-timeout", "900", check=False, env=env)
        if result.returncode != 0:
            self.compose("ps", "-a", check=False)
            raise SystemExit(
                "compose-run: a service did not become healthy (docker compose ps above)"
            )
        self.compose("ps", "-a")

    def attach(self) -> None:
        """The project as a run with ``--keep-up`` left it. What the engine holds but the
        project's labelled things is what `down -v` must leave (its anonymous volumes carry no
        label, so only a run that brought the stack up checks them)."""
        label = ["--filter", f"label=com.docker.compose.project={PROJECT}"]
        self.before = {kind: ids - _ids(kind, *label) for kind, ids in present().items()}
        self.is_up = True

    def down(self) -> dict[str, list[str]]:
        """What the engine holds after `down -v` and did not before `up`, by kind."""
        self.compose("down", "-v", "--remove-orphans", check=False)
        self.is_up = False
        after = present()
        return {kind: sorted(after[kind] - self.before[kind]) for kind in after}

    def save_logs(self, path: Path) -> None:
        with open(path, "w") as out:
            subprocess.run(
                [*self.command(), "logs", "--no-color", "--tail", "400"],
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
            )
        log(f"the services' logs: {path}")
