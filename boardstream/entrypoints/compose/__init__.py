"""docker-compose.yml run for real, as docs/DOCKER_COMPOSE.md tells a user (``bin/compose-run``).

Starts the Docker engine if none answers (its networks on the project's address pool), builds a
stand-in for each official image that is neither present nor pullable (docker/standins/), makes
the ``.env`` from ``.env.example`` with generated secrets (in a temporary directory, never in the
checkout; for a stack left up, under the var dir until it is taken down), ``docker compose up -d
--wait``, then the demo's path through the containers: the
topics ``airflow-init`` created, ``demo_data``, ``board_detail_pipeline`` and the
``reconciliation`` it triggers, read back through the Airflow API server; the "Pipeline health"
page in headless Chromium (a screenshot); ``spark-worker`` scaled to 2 and the second worker seen
registered with the master; then ``docker compose down -v`` and nothing of the project left.
Each phase's time and each image's size go to ``test-artifacts/compose-run.json``.

The front door: :func:`run_for_real` with :class:`RunOptions`, the phases in their order. Each
phase is a module: ``engine`` and ``cli_plugin`` (dockerd, Compose v2), ``standins`` and
``standin_build`` (the images), ``env_file`` and ``project`` (the ``.env``, up and down),
``demo``, ``screenshot`` and ``scale`` (the checks); ``commands`` and ``report`` serve them all.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from boardstream.entrypoints.compose.cli_plugin import ensure_compose
from boardstream.entrypoints.compose.commands import log
from boardstream.entrypoints.compose.demo import check_topics, run_demo
from boardstream.entrypoints.compose.engine import Engine, lower_priority
from boardstream.entrypoints.compose.env_file import make_env
from boardstream.entrypoints.compose.images import image_sizes
from boardstream.entrypoints.compose.project import Project
from boardstream.entrypoints.compose.report import REPORT_FILE, Report
from boardstream.entrypoints.compose.scale import scale_workers
from boardstream.entrypoints.compose.screenshot import screenshot
from boardstream.entrypoints.compose.standin_build import build_standins
from boardstream.settings import PROJECT_ROOT

KEPT_ENV = "env"  # under the var dir: the .env of a stack left up (--keep-up)


@dataclass(frozen=True)
class RunOptions:
    """bin/compose-run's flags (its ``--help`` says each)."""

    port_base: int | None
    no_pull: bool
    keep_up: bool
    keep_daemon: bool
    full_priority: bool
    attach: Path | None
    no_build: bool
    skip_demo: bool
    generator: dict[str, Any]


def run_for_real(options: RunOptions) -> int:
    """0 when every phase passed; a failing one ends the run (SystemExit, saying why) after the
    services' logs are saved, the stack taken down (unless ``keep_up``), a dockerd it started
    stopped (unless ``keep_daemon``) and the report written."""
    var = Path(os.environ.get("BOARDSTREAM_VAR_DIR", PROJECT_ROOT / "var")) / "compose-run"
    var.mkdir(parents=True, exist_ok=True)
    report = Report()
    engine = Engine(var / "dockerd")
    env_dir = _env_dir(var, options)
    project: Project | None = None
    start = time.monotonic()
    ok = False
    try:
        if options.attach is not None:  # a stack this command brought up and left (--keep-up)
            project = Project(options.attach)
            project.attach()
        else:
            with report.phase("engine"):
                engine.ensure()
                if not options.full_priority:
                    lower_priority()
                ensure_compose()
            with report.phase("stand-in images"):
                for built in build_standins(options.no_pull):
                    report.data["standins"].append(built)
            project = Project(make_env(env_dir, options.port_base))
            with report.phase("build and up (every healthcheck passing)"):
                project.bring_up(build=not options.no_build)
        with report.phase("topics"):
            check_topics(project)
        if not options.skip_demo:
            with report.phase("demo: demo_data, pipeline, reconciliation"):
                report.data["reconciliation"] = run_demo(
                    project, options.generator, attached=options.attach is not None
                )
        with report.phase("Pipeline health screenshot"):
            report.data["screenshot"] = screenshot(project.env())
        with report.phase("scale spark-worker to 2"):
            report.data["spark_workers"] = scale_workers(project)
        report.data["images"] = image_sizes()
        ok = True
    finally:
        up = project if project is not None and project.is_up else None
        if up is not None and not ok:
            up.save_logs(var / "compose-logs.txt")
        if not options.keep_up:
            with report.phase("down -v"):
                if up is not None:
                    _down(up, report)
            _forget_env(env_dir, var)  # the stack it served is down
        elif project is not None:
            log(f"left up: go on with `bin/compose-run --attach {project.env_file}`")
        if not options.keep_daemon:
            engine.stop()
        report.data["total_s"] = round(time.monotonic() - start, 1)
        report.data["passed"] = ok
        report.write()
    log(f"passed in {report.data['total_s']} s; report in {REPORT_FILE.relative_to(PROJECT_ROOT)}")
    return 0


def _env_dir(var: Path, options: RunOptions) -> Path:
    """Where the run's ``.env`` lives: an attached stack's own; for a stack to be left up,
    ``var/env`` (0700), which its ``--attach`` run reads; otherwise a temporary directory."""
    if options.attach is not None:
        return options.attach.parent
    if options.keep_up:
        kept = var / KEPT_ENV
        kept.mkdir(mode=0o700, exist_ok=True)
        return kept
    return Path(tempfile.mkdtemp(prefix="bs-compose-env-"))


def _forget_env(env_dir: Path, var: Path) -> None:
    """The ``.env`` of a stack taken down, removed where this command made it (a temporary
    directory, or ``var/env`` for a stack it left up); one given otherwise is the user's."""
    if env_dir.resolve() == (var / KEPT_ENV).resolve():
        (env_dir / ".env").unlink(missing_ok=True)
    elif env_dir.name.startswith("bs-compose-env-"):
        shutil.rmtree(env_dir, ignore_errors=True)


def _down(project: Project, report: Report) -> None:
    left = project.down()
    report.data["left_after_down"] = left
    if any(left.values()):
        raise SystemExit(f"compose-run: left after `down -v`: {left}")
    log("down -v: no container, network or volume of the project left")
