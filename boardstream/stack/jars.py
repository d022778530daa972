"""Java dependencies fetched from Maven Central into ``var/jars`` (git-ignored, offline after),
and boardstream's own JVM code (``jvm/``) compiled there.

Each fetched set is described by a small pom under ``deps/``; Maven's dependency plugin copies
the jars, so versions are pinned in one reviewed file and nothing is downloaded when a job starts.
The join's JVM operator is compiled with ``javac`` against pyspark's own jars: the Spark that
will run it, whose exact artifacts Maven Central does not serve for every pyspark release.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from boardstream.errors import BoardstreamError
from boardstream.settings import PROJECT_ROOT


@dataclass(frozen=True)
class JarSet:
    name: str
    pom_dir: Path

    def target(self, jars_dir: Path) -> Path:
        return jars_dir / self.name

    def jars(self, jars_dir: Path) -> list[Path]:
        return sorted(self.target(jars_dir).glob("*.jar"))


KAFKA_BROKER = JarSet("kafka", PROJECT_ROOT / "deps" / "kafka-broker")
SPARK_KAFKA = JarSet("spark-kafka", PROJECT_ROOT / "deps" / "spark-kafka")
HDFS = JarSet("hdfs", PROJECT_ROOT / "deps" / "hadoop-hdfs")
# Compiled here from jvm/ (see build), not fetched: its pom_dir holds the sources.
JOIN_OPERATOR = JarSet("boardstream-jvm", PROJECT_ROOT / "jvm")
ALL = (KAFKA_BROKER, SPARK_KAFKA, HDFS)
# What every Spark session and spark-submit puts on the classpath.
SPARK = (SPARK_KAFKA, JOIN_OPERATOR)


def fetch(jar_set: JarSet, jars_dir: Path) -> list[Path]:
    """Copy the set's jars into ``jars_dir/<name>``; a no-op when its pom has not changed."""
    target = jar_set.target(jars_dir)
    stamp = target / ".pom"
    pom = (jar_set.pom_dir / "pom.xml").read_text()
    if stamp.exists() and stamp.read_text() == pom and jar_set.jars(jars_dir):
        return jar_set.jars(jars_dir)
    if shutil.which("mvn") is None:
        raise BoardstreamError("Maven (mvn) is not installed; bin/setup installs it")
    shutil.rmtree(target, ignore_errors=True)
    command = [
        "mvn",
        "-B",
        "-q",
        "-f",
        str(jar_set.pom_dir / "pom.xml"),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={target}",
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise BoardstreamError(
            f"fetching the {jar_set.name} jars failed:\n{result.stdout[-2000:]}{result.stderr}"
        )
    stamp.write_text(pom)
    return jar_set.jars(jars_dir)


def _sources(jar_set: JarSet) -> list[Path]:
    return sorted((jar_set.pom_dir / "src" / "main" / "java").rglob("*.java"))


def build(jar_set: JarSet, jars_dir: Path) -> list[Path]:
    """Compile ``jvm/``'s sources against pyspark's jars into ``jars_dir/<name>``; a no-op
    while neither the sources nor pyspark have changed."""
    import pyspark

    spark_jars = Path(pyspark.__file__).parent / "jars"
    sources = _sources(jar_set)
    fingerprint = hashlib.sha256(pyspark.__version__.encode())
    for source in sources:
        fingerprint.update(source.read_bytes())
    target = jar_set.target(jars_dir)
    stamp = target / ".sources"
    if stamp.exists() and stamp.read_text() == fingerprint.hexdigest() and jar_set.jars(jars_dir):
        return jar_set.jars(jars_dir)
    if shutil.which("javac") is None or shutil.which("jar") is None:
        raise BoardstreamError("a JDK (javac, jar) is not installed; bin/setup installs one")
    shutil.rmtree(target, ignore_errors=True)
    classes = target / "classes"
    steps = [
        [
            "javac",
            "--release",
            "17",
            "-Xlint:all,-path",
            "-Werror",
            "-cp",
            f"{spark_jars}/*",
            "-d",
            str(classes),
            *map(str, sources),
        ],
        ["jar", "--create", "--file", str(target / f"{jar_set.name}.jar"), "-C", str(classes), "."],
    ]
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise BoardstreamError(
                f"building {jar_set.name} failed ({step[0]}):\n{result.stdout}{result.stderr}"
            )
    shutil.rmtree(classes)
    stamp.write_text(fingerprint.hexdigest())
    return jar_set.jars(jars_dir)


def require(jar_set: JarSet, jars_dir: Path) -> list[Path]:
    """The set's jars, or a clear error saying how to get them."""
    jars = jar_set.jars(jars_dir)
    if not jars:
        raise BoardstreamError(
            f"no {jar_set.name} jars in {jar_set.target(jars_dir)}; run `boardstream setup` "
            "(or bin/setup) once with Maven Central reachable"
        )
    return jars


def spark_classpath(jars_dir: Path) -> list[Path]:
    """Every jar a Spark session or spark-submit needs beside Spark's own: the Kafka connector
    and the join's operator."""
    return [jar for jar_set in SPARK for jar in require(jar_set, jars_dir)]
