"""The jar cache without Maven or a JDK (``subprocess.run`` and ``shutil.which`` replaced): a set
is fetched again only when its pom changed, the operator rebuilt only when its sources or
pyspark changed; the exact mvn, javac and jar command lines; a stale cache is replaced whole;
failures and missing tools name the fix; and Spark's classpath is the connector, then the
operator."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

import pyspark
import pytest

from boardstream.errors import BoardstreamError
from boardstream.stack import jars
from boardstream.stack.jars import JarSet, build, fetch, require, spark_classpath

POM = "<project>v1</project>"


@pytest.fixture
def jar_set(tmp_path: Path) -> JarSet:
    pom_dir = tmp_path / "deps" / "kafka"
    pom_dir.mkdir(parents=True)
    (pom_dir / "pom.xml").write_text(POM)
    return JarSet("kafka", pom_dir)


@pytest.fixture
def jars_dir(tmp_path: Path) -> Path:
    return tmp_path / "jars"


class Tools:
    """Stands in for mvn, javac and jar: records each command and makes what it would."""

    def __init__(self) -> None:
        self.commands: list[list[str]] = []
        self.fail: str | None = None  # the tool that exits 1
        self.installed = {"mvn", "javac", "jar"}

    def which(self, name: str) -> str | None:
        return f"/usr/bin/{name}" if name in self.installed else None

    def run(self, command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert kwargs == {"capture_output": True, "text": True, "check": False}
        self.commands.append(command)
        if command[0] == self.fail:
            return subprocess.CompletedProcess(command, 1, "x" * 3000 + "OUT-END\n", "ERR\n")
        if command[0] == "mvn":
            target = Path(command[-1].removeprefix("-DoutputDirectory="))
            target.mkdir(parents=True)
            for name in ("b.jar", "a.jar"):
                (target / name).write_bytes(b"")
        elif command[0] == "javac":
            (Path(command[command.index("-d") + 1]) / "Op.class").parent.mkdir(parents=True)
        elif command[0] == "jar":
            Path(command[command.index("--file") + 1]).write_bytes(b"")
        return subprocess.CompletedProcess(command, 0, "", "")


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch) -> Tools:
    fake = Tools()
    monkeypatch.setattr(jars.subprocess, "run", fake.run)
    monkeypatch.setattr(jars.shutil, "which", fake.which)
    return fake


def test_a_sets_jars_are_the_jar_files_of_its_directory(jar_set, jars_dir) -> None:
    assert jar_set.target(jars_dir) == jars_dir / "kafka"
    assert jar_set.jars(jars_dir) == []
    (jars_dir / "kafka").mkdir(parents=True)
    for name in ("z.jar", "a.jar", ".pom", "notes.txt"):
        (jars_dir / "kafka" / name).write_text("")
    assert jar_set.jars(jars_dir) == [jars_dir / "kafka" / "a.jar", jars_dir / "kafka" / "z.jar"]


def test_fetch_copies_the_poms_dependencies_once(jar_set, jars_dir, tools) -> None:
    stale = jars_dir / "kafka" / "old-1.0.jar"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"")
    found = fetch(jar_set, jars_dir)
    assert found == [jars_dir / "kafka" / "a.jar", jars_dir / "kafka" / "b.jar"]
    assert not stale.exists()  # the cache is replaced, not added to
    assert tools.commands == [
        [
            "mvn",
            "-B",
            "-q",
            "-f",
            str(jar_set.pom_dir / "pom.xml"),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={jars_dir / 'kafka'}",
        ]
    ]
    assert (jars_dir / "kafka" / ".pom").read_text() == POM
    assert fetch(jar_set, jars_dir) == found
    assert len(tools.commands) == 1  # the same pom: nothing fetched


def test_a_changed_pom_or_a_lost_jar_fetches_again(jar_set, jars_dir, tools) -> None:
    fetch(jar_set, jars_dir)
    (jar_set.pom_dir / "pom.xml").write_text("<project>v2</project>")
    fetch(jar_set, jars_dir)
    assert (jars_dir / "kafka" / ".pom").read_text() == "<project>v2</project>"
    for jar in jar_set.jars(jars_dir):
        jar.unlink()
    fetch(jar_set, jars_dir)
    assert len(tools.commands) == 3


def test_fetch_without_maven_says_how_to_get_it(jar_set, jars_dir, tools) -> None:
    tools.installed = set()
    with pytest.raises(BoardstreamError, match=r"^Maven \(mvn\) is not installed; bin/setup"):
        fetch(jar_set, jars_dir)
    assert tools.commands == []


def test_a_failed_fetch_shows_mavens_output_and_stamps_nothing(jar_set, jars_dir, tools) -> None:
    tools.fail = "mvn"
    with pytest.raises(BoardstreamError) as failed:
        fetch(jar_set, jars_dir)
    message = str(failed.value)
    assert message.startswith("fetching the kafka jars failed:\nxxx")
    assert message.endswith("OUT-END\nERR\n")
    assert len(message) == len("fetching the kafka jars failed:\n") + 2000 + len("ERR\n")
    assert not (jars_dir / "kafka" / ".pom").exists()


@pytest.fixture
def operator(tmp_path: Path) -> JarSet:
    sources = tmp_path / "jvm" / "src" / "main" / "java" / "boardstream"
    (sources / "inner").mkdir(parents=True)
    (sources / "Join.java").write_text("class Join {}")
    (sources / "inner" / "State.java").write_text("class State {}")
    (sources / "README.md").write_text("not a source")
    return JarSet("boardstream-jvm", tmp_path / "jvm")


def fingerprint(operator: JarSet) -> str:
    digest = hashlib.sha256(pyspark.__version__.encode())
    for source in sorted((operator.pom_dir / "src" / "main" / "java").rglob("*.java")):
        digest.update(source.read_bytes())
    return digest.hexdigest()


def test_build_compiles_against_pysparks_jars_once(operator, jars_dir, tools) -> None:
    target = jars_dir / "boardstream-jvm"
    assert build(operator, jars_dir) == [target / "boardstream-jvm.jar"]
    java = operator.pom_dir / "src" / "main" / "java" / "boardstream"
    spark_jars = Path(pyspark.__file__).parent / "jars"
    assert tools.commands == [
        [
            "javac",
            "--release",
            "17",
            "-Xlint:all,-path",
            "-Werror",
            "-cp",
            f"{spark_jars}/*",
            "-d",
            str(target / "classes"),
            str(java / "Join.java"),
            str(java / "inner" / "State.java"),
        ],
        [
            "jar",
            "--create",
            "--file",
            str(target / "boardstream-jvm.jar"),
            "-C",
            str(target / "classes"),
            ".",
        ],
    ]
    assert not (target / "classes").exists()
    assert (target / ".sources").read_text() == fingerprint(operator)
    build(operator, jars_dir)
    assert len(tools.commands) == 2  # unchanged: not rebuilt
    (java / "Join.java").write_text("class Join { int x; }")
    build(operator, jars_dir)
    assert len(tools.commands) == 4


def test_build_without_a_jdk_says_how_to_get_one(operator, jars_dir, tools) -> None:
    tools.installed = {"javac"}
    with pytest.raises(BoardstreamError, match=r"^a JDK \(javac, jar\) is not installed"):
        build(operator, jars_dir)
    assert tools.commands == []


def test_a_failed_compile_names_the_step_and_stamps_nothing(operator, jars_dir, tools) -> None:
    tools.fail = "javac"
    with pytest.raises(BoardstreamError) as failed:
        build(operator, jars_dir)
    assert str(failed.value) == "building boardstream-jvm failed (javac):\n" + "x" * 3000 + (
        "OUT-END\nERR\n"
    )
    assert [command[0] for command in tools.commands] == ["javac"]
    assert not (jars_dir / "boardstream-jvm" / ".sources").exists()


def test_require_names_the_fix_when_a_set_is_missing(jar_set, jars_dir) -> None:
    with pytest.raises(BoardstreamError) as missing:
        require(jar_set, jars_dir)
    assert str(missing.value) == (
        f"no kafka jars in {jars_dir / 'kafka'}; run `boardstream setup` (or bin/setup) once "
        "with Maven Central reachable"
    )


def test_sparks_classpath_is_the_connector_then_the_operator(jars_dir) -> None:
    for name in (
        "spark-kafka/kafka-clients.jar",
        "spark-kafka/connector.jar",
        "boardstream-jvm/op.jar",
    ):
        (jars_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (jars_dir / name).write_bytes(b"")
    assert spark_classpath(jars_dir) == [
        jars_dir / "spark-kafka" / "connector.jar",
        jars_dir / "spark-kafka" / "kafka-clients.jar",
        jars_dir / "boardstream-jvm" / "op.jar",
    ]
    (jars_dir / "boardstream-jvm" / "op.jar").unlink()
    with pytest.raises(BoardstreamError, match=r"^no boardstream-jvm jars in"):
        spark_classpath(jars_dir)


def test_the_sets_and_where_their_poms_are() -> None:
    assert [s.name for s in jars.ALL] == ["kafka", "spark-kafka", "hdfs"]
    assert [s.name for s in jars.SPARK] == ["spark-kafka", "boardstream-jvm"]
    for jar_set in jars.ALL:
        assert (jar_set.pom_dir / "pom.xml").is_file()
    assert any((jars.JOIN_OPERATOR.pom_dir / "src" / "main" / "java").rglob("*.java"))
