"""``boardstream job run NAME``: a job's thin entry point under ``spark-submit``, offline.

The Kafka connector comes from the local jar cache (``--jars``), Python workers use this
interpreter, and the master comes from settings, so the same command runs locally or against a
cluster. Airflow's SparkSubmitOperator is given the same application path and jars.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from boardstream import logs
from boardstream.errors import BoardstreamError
from boardstream.settings import PROJECT_ROOT, Settings
from boardstream.spark import bind_address, class_archive, distribution, jvm_options
from boardstream.stack import jars

JOBS = {
    "board-detail-join": "board_detail_join.py",
    "board-detail-sink": "board_detail_sink.py",
    "reconcile": "reconcile.py",
    "board-detail-repair": "repair.py",
    "table-count": "table_count.py",
    "session-count": "session_count.py",
    "window-count": "window_count.py",
}


def application(job: str) -> Path:
    if job not in JOBS:
        raise BoardstreamError(f"unknown job {job!r}; known jobs: {', '.join(sorted(JOBS))}")
    return PROJECT_ROOT / "jobs" / JOBS[job]


def spark_home() -> Path:
    """The pyspark package is a complete Spark distribution (bin/, jars/); refused when its
    Python files and its jars are different Spark versions, before spark-submit starts."""
    return distribution.require()


def submit_env(settings: Settings | None = None) -> dict[str, str]:
    """The environment spark-submit runs in: this venv's Spark and Python first on the path,
    and, when given, the settings the job must see (e.g. a cluster from an Airflow connection)
    and the address its driver binds to (:mod:`.bind_address`)."""
    venv_bin = str(Path(sys.executable).parent)
    env = {
        "SPARK_HOME": str(spark_home()),
        "PYSPARK_PYTHON": sys.executable,
        "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    if settings is not None:
        env.update(settings.kafka_env())
        env.update(bind_address.bind_env(settings.spark_master))
    return env


def connector_jars(settings: Settings) -> str:
    """The Kafka connector and its dependencies, and the join's operator, from the local jar
    cache (no Ivy at run time)."""
    return ",".join(str(jar) for jar in jars.spark_classpath(settings.jars_dir))


def submit_conf(console: bool) -> dict[str, str]:
    """Driver and workers run this interpreter, which has the core package installed; Spark logs
    as boardstream configures it, with progress bars only when ``console`` (a terminal)."""
    return {
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        **logs.spark_conf(console),
    }


def submit_command(
    settings: Settings,
    job: str,
    job_args: list[str],
    conf: Mapping[str, str] | None = None,
    short_lived: bool = False,
) -> list[str]:
    """spark-submit of ``job``, run from this process: its console is this process's stderr;
    ``conf``: Spark settings of this application's own (e.g. its share of a cluster). The driver
    maps the class archive when ``boardstream setup`` built one (:mod:`.class_archive`), and
    compiles with C1 only when ``short_lived``; both the driver and executors use the parallel
    collector (:mod:`.jvm_options`)."""
    options = {**submit_conf(sys.stderr.isatty()), **(conf or {})}
    options = jvm_options.configure(options, settings.jars_dir, short_lived)
    return [*spark_submit(settings, job, options), str(application(job)), *job_args]


def spark_submit(settings: Settings, name: str, conf: Mapping[str, str]) -> list[str]:
    """spark-submit with the options every boardstream application gets, up to the application:
    the settings' master and driver memory, the connector jars, ``conf``."""
    conf_args = [arg for name, value in conf.items() for arg in ("--conf", f"{name}={value}")]
    return [
        str(spark_home() / "bin" / "spark-submit"),
        "--master",
        settings.spark_master,
        "--name",
        name,
        "--driver-memory",
        settings.spark_driver_memory,
        "--jars",
        connector_jars(settings),
        *conf_args,
    ]


def run_env(settings: Settings) -> dict[str, str]:
    """The environment the CLI runs spark-submit in: its own, the settings, Spark's."""
    return {**os.environ, **settings.to_env(), **submit_env(settings)}


def build_class_archive(settings: Settings) -> Path:
    """Build the drivers' class archive as the CLI's spark-submit would run a job, in local
    mode (a cluster need not be up for setup), without an archive (not mapping an older one)."""
    local = settings.model_copy(update={"spark_master": "local[1]"})
    command = spark_submit(local, "boardstream-warm-up", submit_conf(console=False))
    return class_archive.build(settings.jars_dir, command, run_env(settings))


def run_submit(settings: Settings, job: str, job_args: list[str], short_lived: bool = False) -> int:
    """spark-submit ``job`` in the foreground, as the CLI runs every job, with ``settings`` (the
    job reads them from its environment); its exit code."""
    command = submit_command(settings, job, job_args, short_lived=short_lived)
    return subprocess.run(command, env=run_env(settings), check=False).returncode
