"""Java dependencies fetched from Maven Central into ``var/jars`` (git-ignored, offline after).

Each set is described by a small pom under ``deps/``; Maven's dependency plugin copies the jars,
so versions are pinned in one reviewed file and nothing is downloaded when a job starts.
"""

from __future__ import annotations

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
ALL = (KAFKA_BROKER, SPARK_KAFKA)


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


def require(jar_set: JarSet, jars_dir: Path) -> list[Path]:
    """The set's jars, or a clear error saying how to get them."""
    jars = jar_set.jars(jars_dir)
    if not jars:
        raise BoardstreamError(
            f"no {jar_set.name} jars in {jar_set.target(jars_dir)}; run `boardstream setup` "
            "(or bin/setup) once with Maven Central reachable"
        )
    return jars
