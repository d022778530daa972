"""The drivers' class archive (boardstream/spark/class_archive.py) without a JVM: what its key
follows, when a driver is offered it, and its build's outcome with a stand-in for spark-submit.
A real driver mapping the real archive: tests/integration/test_class_archive.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from boardstream.errors import BoardstreamError
from boardstream.spark import class_archive
from boardstream.spark.class_archive import DRIVER_OPTIONS

EXECUTOR_OPTIONS = "spark.executor.defaultJavaOptions"


def spark_home(tmp_path: Path, *jars: tuple[str, bytes]) -> Path:
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    for name, content in jars:
        (home / "jars" / name).write_bytes(content)
    return home


@pytest.fixture
def java(tmp_path: Path) -> Path:
    path = tmp_path / "jdk" / "bin" / "java"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"a java")
    return path


@pytest.fixture
def home(tmp_path: Path, java: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Spark home of one jar, and ``java``, as the ones spark-submit would run."""
    home = spark_home(tmp_path, ("spark-core.jar", b"core"))
    monkeypatch.setattr(class_archive, "java_binary", lambda: java)
    monkeypatch.setattr(class_archive.distribution, "require", lambda: home)
    return home


def test_the_key_follows_the_jvm_and_sparks_jars(tmp_path: Path, java: Path) -> None:
    home = spark_home(tmp_path, ("spark-core.jar", b"core"), ("spark-sql.jar", b"sql"))
    first = class_archive.key(java, home)
    assert class_archive.key(java, home) == first
    (home / "jars" / "spark-sql.jar").write_bytes(b"sql, another build")
    resized = class_archive.key(java, home)
    (home / "jars" / "extra.jar").write_bytes(b"")
    added = class_archive.key(java, home)
    other_java = tmp_path / "java"
    shutil.copy(java, other_java)
    assert len({first, resized, added, class_archive.key(other_java, home)}) == 4


def test_a_driver_is_offered_the_archive_only_once_built(
    tmp_path: Path, java: Path, home: Path
) -> None:
    jars_dir = tmp_path / "jars"
    conf = {DRIVER_OPTIONS: "-Dx=1", EXECUTOR_OPTIONS: "-Dx=1"}
    assert class_archive.with_archive(conf, jars_dir) == conf
    archive = class_archive.archive_path(jars_dir, java, home)
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"classes")
    archive.with_suffix(".bytes").write_text("7")  # as its build records it
    assert class_archive.with_archive(conf, jars_dir) == {
        DRIVER_OPTIONS: f"-Dx=1 -XX:SharedArchiveFile={archive}",
        EXECUTOR_OPTIONS: "-Dx=1",  # a cluster's executors: other JVMs, other class paths
    }
    assert class_archive.with_archive({}, jars_dir) == {
        DRIVER_OPTIONS: f"-XX:SharedArchiveFile={archive}"
    }


def test_java_is_javas_home_first_then_the_path(
    tmp_path: Path, java: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(java.parent.parent))
    assert class_archive.java_binary() == java.resolve()
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "none"))
    with pytest.raises(BoardstreamError, match=r"^no java: set JAVA_HOME or put java on the PATH$"):
        class_archive.java_binary()


# Stand-ins for spark-submit: one writes the archive its JVM is asked to, one fails.
WRITE_IT = 'for a; do case "$a" in -XX:ArchiveClassesAtExit=*) echo c > "${a#*=}";; esac; done'
WRITES = ["sh", "-c", WRITE_IT, "submit"]
FAILS = ["sh", "-c", "echo 'Error: no main class' >&2; exit 3", "submit"]


def test_a_build_puts_its_archive_in_place_and_drops_older_ones(
    tmp_path: Path, java: Path, home: Path
) -> None:
    jars_dir = tmp_path / "jars"
    older = jars_dir / "cds" / "spark-driver-0000000000000000.jsa"
    older.parent.mkdir(parents=True)
    older.write_bytes(b"of another Spark")
    built = class_archive.build(jars_dir, WRITES, dict(os.environ))
    assert built == class_archive.archive_path(jars_dir, java, home)
    # No older archive, no scratch left; beside it, the size it was built with.
    assert sorted(built.parent.iterdir()) == [built.with_suffix(".bytes"), built]
    assert built.read_text() == "c\n"
    assert built.with_suffix(".bytes").read_text() == "2"


def test_an_archive_cut_short_or_without_its_record_is_not_offered(
    tmp_path: Path, java: Path, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A JVM maps a truncated archive and dies of SIGBUS: such a file is never offered."""
    jars_dir = tmp_path / "jars"
    built = class_archive.build(jars_dir, WRITES, dict(os.environ))
    conf = {DRIVER_OPTIONS: "-Dx=1"}
    assert class_archive.with_archive(conf, jars_dir) == {
        DRIVER_OPTIONS: f"-Dx=1 -XX:SharedArchiveFile={built}"
    }
    built.write_text("c")  # cut short: 1 byte of the 2 built
    assert class_archive.with_archive(conf, jars_dir) == conf
    assert f"driver class archive {built}: 1 bytes, its build recorded 2: not used" in caplog.text
    built.write_text("c\n")
    record = built.with_suffix(".bytes")
    for damaged in ("", "2 bytes"):  # a record written onto a full disk, or not by a build
        record.write_text(damaged)
        assert class_archive.with_archive(conf, jars_dir) == conf
    record.unlink()  # a build that ended before it recorded the size
    assert class_archive.with_archive(conf, jars_dir) == conf


@pytest.mark.usefixtures("home")
def test_a_failed_build_says_why_and_leaves_no_archive(tmp_path: Path) -> None:
    jars_dir = tmp_path / "jars"
    message = r"^the driver class archive was not built \(spark-submit exited 3\): Error: no main"
    with pytest.raises(BoardstreamError, match=message):
        class_archive.build(jars_dir, FAILS, dict(os.environ))
    assert list((jars_dir / "cds").iterdir()) == []
