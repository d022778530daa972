"""``boardstream job run NAME``: a job's thin entry point under ``spark-submit``, offline.

The Kafka connector comes from the local jar cache (``--jars``), Python workers use this
interpreter, and the master comes from settings, so the same command runs locally or against a
cluster. Airflow's SparkSubmitOperator is given the same application path and jars.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from boardstream.errors import BoardstreamError
from boardstream.settings import PROJECT_ROOT, Settings
from boardstream.stack import jars

JOBS = {
    "board-detail-join": "board_detail_join.py",
    "board-detail-sink": "board_detail_sink.py",
    "reconcile": "reconcile.py",
    "board-detail-repair": "repair.py",
}


def application(job: str) -> Path:
    if job not in JOBS:
        raise BoardstreamError(f"unknown job {job!r}; known jobs: {', '.join(sorted(JOBS))}")
    return PROJECT_ROOT / "jobs" / JOBS[job]


def spark_home() -> Path:
    """The pyspark package is a complete Spark distribution (bin/, jars/)."""
    import pyspark

    return Path(pyspark.__file__).parent


def submit_env() -> dict[str, str]:
    return {**os.environ, "SPARK_HOME": str(spark_home()), "PYSPARK_PYTHON": sys.executable}


def submit_command(settings: Settings, job: str, job_args: list[str]) -> list[str]:
    connector = ",".join(str(jar) for jar in jars.require(jars.SPARK_KAFKA, settings.jars_dir))
    return [
        str(spark_home() / "bin" / "spark-submit"),
        "--master",
        settings.spark_master,
        "--name",
        job,
        "--driver-memory",
        settings.spark_driver_memory,
        "--jars",
        connector,
        "--conf",
        f"spark.pyspark.python={sys.executable}",
        "--conf",
        f"spark.pyspark.driver.python={sys.executable}",
        str(application(job)),
        *job_args,
    ]
