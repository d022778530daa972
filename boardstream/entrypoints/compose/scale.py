"""``spark-worker`` scaled to 2, as docs/DOCKER_COMPOSE.md tells a user to add capacity, and the
second worker seen registered with the master: scaling works only if a worker takes no fixed
host port or name."""

from __future__ import annotations

import json
import time
import urllib.request

from boardstream.entrypoints.compose.commands import log
from boardstream.entrypoints.compose.project import Project


def alive_workers(env: dict[str, str]) -> int:
    """The workers the master's ``/json/`` lists ALIVE, at the ``.env``'s Spark UI port."""
    port = env["SPARK_UI_PORT"]
    with urllib.request.urlopen(f"http://localhost:{port}/json/", timeout=10) as response:
        state = json.loads(response.read())
    return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")


def scale_workers(project: Project) -> dict[str, int]:
    """The workers alive before and after scaling to 2 (after: 2, else the run ends)."""
    before = alive_workers(project.env())
    project.compose(
        "up",
        "-d",
        "--no-recreate",
        "--wait",
        "--scale",
        "spark-worker=2",
        "spark-worker",
        env={"DOCKER_BUILDKIT": "0"},
    )
    deadline = time.monotonic() + 180
    while (alive := alive_workers(project.env())) < 2:
        if time.monotonic() > deadline:
            raise SystemExit(f"compose-run: {alive} Spark worker(s) alive after scaling to 2")
        time.sleep(3)
    log(f"Spark workers alive: {before} before scaling, {alive} after")
    return {"before": before, "after": alive}
