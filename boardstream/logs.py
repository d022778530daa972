"""Who speaks in boardstream's logs: its own lines; Spark, py4j and Great Expectations only from
WARNING up unless asked (``--verbose``, or ``BOARDSTREAM_VERBOSE=1``, which the CLI passes on to
the jobs it starts). Without this, a task log holds GX's ~200 "Skipping registering function"
lines (logged at INFO when it is imported), py4j's connection chatter and Spark's INFO lines.

Spark logs through log4j on the JVM: :func:`spark_conf` points the driver and executors at
``spark/log4j2.properties`` (WARN, or INFO when verbose; two lines that warn on every healthy
stateful run silenced) and keeps the console progress bars for terminals.

Progress lines (a job's batches, records produced, a service starting) are INFO records under
the ``boardstream.progress`` logger. Nothing is shown until an entry point calls
:func:`configure`, so code importing boardstream stays quiet (and inside an Airflow task they
reach the task log through Airflow's own handlers).
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

VERBOSE_ENV = "BOARDSTREAM_VERBOSE"
PROGRESS = "boardstream.progress"
LINE_FORMAT = "%(levelname)s %(name)s: %(message)s"
LIBRARIES = ("great_expectations", "py4j", "pyspark")
LOG4J2 = Path(__file__).parent / "spark" / "log4j2.properties"


def verbose_requested() -> bool:
    return os.environ.get(VERBOSE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def quiet_libraries(verbose: bool) -> None:
    """Libraries' records below WARNING dropped, or (verbose) left to the root logger's level;
    GX's imports of modules Python deprecated (``sre_constants``) not reported as warnings."""
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(logging.NOTSET if verbose else logging.WARNING)
    if not verbose:
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="great_expectations")


def progress_logger(area: str) -> logging.Logger:
    """The logger of ``area``'s progress lines (log them at INFO)."""
    return logging.getLogger(f"{PROGRESS}.{area}")


def configure(verbose: bool) -> None:
    """An entry point's logging on stderr: boardstream's lines from INFO with level and logger
    name, progress lines exactly as written (a log reads like the terminal), librdkafka's own
    retries and libraries' chatter only when verbose. Idempotent."""
    logging.basicConfig(level=logging.INFO, format=LINE_FORMAT)
    progress = logging.getLogger(PROGRESS)
    if not progress.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        progress.addHandler(handler)
        progress.propagate = False
    # Connection failures reach the caller as errors (kafka/clients.py): its retries are noise.
    logging.getLogger("boardstream.librdkafka").setLevel(
        logging.DEBUG if verbose else logging.CRITICAL
    )
    quiet_libraries(verbose)


def spark_conf(console: bool) -> dict[str, str]:
    """Spark's logging, for spark-submit ``--conf`` or a session's builder before its JVM
    starts; ``console``: whether its output is a terminal (progress bars) or a log."""
    level = "info" if verbose_requested() else "warn"
    options = f"-Dlog4j2.configurationFile={LOG4J2} -Dboardstream.spark.log.level={level}"
    return {
        "spark.driver.defaultJavaOptions": options,
        "spark.executor.defaultJavaOptions": options,
        "spark.ui.showConsoleProgress": str(console).lower(),
    }
