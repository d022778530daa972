"""A class-data-sharing archive (the JDK's AppCDS) of the classes a Spark driver loads as it
starts and runs a stateful query: a driver JVM that maps it starts in about half the time
(``bench/jvm_start.py``), which every spark-submit (each job run, each Airflow task) pays.

``boardstream setup`` builds it once, by running a small warm-up application under
``-XX:ArchiveClassesAtExit``. Its name carries a key of the JVM and of Spark's jars, so a driver
is only offered an archive of its own JVM and Spark; a JVM that still cannot map one says so in a
warning and starts without it. Only drivers use it: executors of a cluster have their own JVMs.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from boardstream.errors import BoardstreamError
from boardstream.settings import PROJECT_ROOT
from boardstream.spark import distribution

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

DRIVER_OPTIONS = "spark.driver.defaultJavaOptions"
WARM_UP = PROJECT_ROOT / "jobs" / "warm_up.py"
BUILD_TIMEOUT_S = 600


def java_binary() -> Path:
    """The java spark-submit runs (its ``spark-class``): ``$JAVA_HOME/bin/java``, else the
    first on the path."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not Path(found).is_file():
        raise BoardstreamError("no java: set JAVA_HOME or put java on the PATH")
    return Path(found).resolve()


def key(java: Path, spark_home: Path) -> str:
    """What an archive is valid for: this JVM binary and this Spark's jars, by name and size."""
    digest = hashlib.sha256()
    stat = java.stat()
    digest.update(f"{java}\0{stat.st_size}\0{stat.st_mtime_ns}\0{spark_home}\0".encode())
    for jar in sorted((spark_home / "jars").glob("*.jar")):
        digest.update(f"{jar.name}\0{jar.stat().st_size}\0".encode())
    return digest.hexdigest()[:16]


def archive_path(jars_dir: Path, java: Path, spark_home: Path) -> Path:
    return jars_dir / "cds" / f"spark-driver-{key(java, spark_home)}.jsa"


def current_archive(jars_dir: Path) -> Path:
    """Where the archive of this JVM and this Spark lives (built or not)."""
    return archive_path(jars_dir, java_binary(), distribution.require())


def _built_size(archive: Path) -> Path:
    """Where the build records the archive's size: a JVM maps an archive cut short (a full
    disk, a partial copy) and dies of SIGBUS instead of starting without it."""
    return archive.with_suffix(".bytes")


def with_archive(conf: Mapping[str, str], jars_dir: Path) -> dict[str, str]:
    """``conf`` with the driver's JVM mapping the archive, when one was built for it and it is
    whole (the size its build recorded)."""
    archive = current_archive(jars_dir)
    if not archive.is_file():
        return dict(conf)
    record = _built_size(archive)
    built = record.read_text().strip() if record.is_file() else "none"
    size = archive.stat().st_size
    if built != str(size):  # also a record cut short or unreadable as a size: not trusted
        log.warning(
            "driver class archive %s: %d bytes, its build recorded %s: not used (boardstream "
            "setup builds it again)",
            archive,
            size,
            built or "nothing",
        )
        return dict(conf)
    options = " ".join(filter(None, [conf.get(DRIVER_OPTIONS), f"-XX:SharedArchiveFile={archive}"]))
    return {**conf, DRIVER_OPTIONS: options}


def build(jars_dir: Path, submit: list[str], env: Mapping[str, str]) -> Path:
    """Run the warm-up application with ``submit`` (spark-submit and the options every job
    gets) and keep the classes its driver loaded; written aside and renamed into place, so a
    driver never maps a half-written archive. Older archives (another JVM or Spark) go."""
    archive = current_archive(jars_dir)
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=archive.parent) as work:
        partial = Path(work) / archive.name
        command = [
            *submit,
            "--driver-java-options",
            f"-XX:ArchiveClassesAtExit={partial}",
            str(WARM_UP),
            work,
        ]
        done = subprocess.run(
            command, env=dict(env), capture_output=True, text=True, timeout=BUILD_TIMEOUT_S
        )
        if done.returncode != 0 or not partial.is_file():
            raise BoardstreamError(
                f"the driver class archive was not built (spark-submit exited {done.returncode}):"
                f" {done.stderr.strip()[-2000:]}"
            )
        os.replace(partial, archive)
        _built_size(archive).write_text(str(archive.stat().st_size))
    for old in archive.parent.glob("spark-driver-*"):
        if old.stem != archive.stem:
            old.unlink()
    return archive


def warm_up(spark: SparkSession, work: Path) -> None:
    """What the build runs, so the archive holds what jobs load: a batch aggregation, Arrow
    out, and a stateful streaming query on the session's RocksDB state store, with a checkpoint,
    run to its end (``work``: a scratch directory)."""
    spark.range(1_000).selectExpr("id % 7 AS k").groupBy("k").count().toArrow()
    source = work / "records"
    source.mkdir()
    lines = (json.dumps({"k": i % 5, "v": i}) for i in range(100))
    (source / "0.json").write_text("\n".join(lines) + "\n")
    query = (
        spark.readStream.schema("k INT, v INT")
        .json(str(source))
        .groupBy("k")
        .count()
        .writeStream.outputMode("update")
        .format("noop")
        .option("checkpointLocation", str(work / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
