"""``bin/compose-run``: docker-compose.yml run for real, as docs/DOCKER_COMPOSE.md tells a user.

The flags and the exit code; the run itself, phase by phase, is :mod:`.compose`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from boardstream.entrypoints.compose import RunOptions, run_for_real


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bin/compose-run", description=__doc__.splitlines()[0])
    p.add_argument(
        "--port-base",
        type=int,
        default=None,
        help="map the host ports at this base (+80 Airflow, +81 Spark UI, +870 HDFS UI, "
        "+92 Kafka) instead of .env.example's",
    )
    p.add_argument(
        "--no-pull", action="store_true", help="build stand-ins without trying a registry"
    )
    p.add_argument(
        "--keep-up",
        action="store_true",
        help="leave the stack up after the run (passed or not), for a look",
    )
    p.add_argument(
        "--keep-daemon", action="store_true", help="leave a dockerd this run started running"
    )
    p.add_argument(
        "--full-priority",
        action="store_true",
        help="leave the containers' CPU weight as Docker sets it (the run lowers it to a quarter)",
    )
    p.add_argument(
        "--attach",
        type=Path,
        metavar="ENV_FILE",
        help="go on with a stack left up (--keep-up) from the demo on, with its .env",
    )
    p.add_argument(
        "--no-build",
        action="store_true",
        help="use the project image as built before (Compose still builds it when absent)",
    )
    p.add_argument("--skip-demo", action="store_true", help="up, screenshot, scale and down only")
    p.add_argument(
        "--generator",
        type=json.loads,
        default={"members": 500, "boards": 800},
        help="demo_data's conf (JSON)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    return run_for_real(RunOptions(**vars(parser().parse_args(argv))))


if __name__ == "__main__":
    sys.exit(main())
