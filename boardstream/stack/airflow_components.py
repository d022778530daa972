"""Airflow's components run one by one, as ``airflow standalone`` runs them but with the
executor the configuration names: standalone replaces any executor that is not a local one
with LocalExecutor, which would run the Edge executor's tasks on the API server's host.

The database is migrated first (standalone's ``initdb``), then scheduler, DAG processor, API
server and triggerer start, each ``airflow <component>`` from the PATH in this process's
session, their output in this process's. SIGINT or SIGTERM stops them all (SIGTERM to each,
then, after ``STOP_TIMEOUT_S``, SIGKILL), and so does one of them exiting: then the runner
exits 1, the service down and its log saying which.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import time
from collections.abc import Callable, Sequence

logger = logging.getLogger(__name__)

COMPONENTS = ("scheduler", "dag-processor", "api-server", "triggerer")
STOP_TIMEOUT_S = 20.0


def run_components(
    airflow: str,
    components: Sequence[str] = COMPONENTS,
    start: Callable[[list[str]], subprocess.Popen[bytes]] = subprocess.Popen,
) -> int:
    """Migrate, run ``components`` until asked to stop or one exits; the exit code."""
    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    migrate = start([airflow, "db", "migrate"])
    if migrate.wait() != 0:
        logger.error("airflow db migrate failed (code %s)", migrate.returncode)
        return 1
    if stopping:
        return 0
    running = {name: start([airflow, name]) for name in components}
    exited: list[str] = []
    while not stopping and not exited:
        exited = [name for name, process in running.items() if process.poll() is not None]
        time.sleep(0.5)
    for name in exited:
        logger.error("airflow %s exited (code %s): stopping the others", name, running[name].poll())
    for process in running.values():
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for process in running.values():
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return 1 if exited else 0
