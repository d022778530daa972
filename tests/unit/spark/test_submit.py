"""``boardstream job run``'s spark-submit command (boardstream/spark/submit.py), built without
running it: which application each job name runs, the environment and ``--conf`` it is given,
and the connector jars read from a jar cache laid out under a temporary directory. Running
spark-submit itself starts Java (tests/integration/test_job_cli.py)."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pyspark
import pytest

from boardstream.errors import BoardstreamError
from boardstream.logs import LOG4J2, VERBOSE_ENV
from boardstream.settings import PROJECT_ROOT, Settings
from boardstream.spark import submit
from boardstream.spark.collector import DRIVER_ENVIRONMENT, PARALLEL

SPARK_HOME = Path(pyspark.__file__).parent
WARN = f"-Dlog4j2.configurationFile={LOG4J2} -Dboardstream.spark.log.level=warn"


@pytest.fixture(autouse=True)
def not_verbose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VERBOSE_ENV, raising=False)
    for name in DRIVER_ENVIRONMENT:  # no collector chosen there (spark/collector.py)
        monkeypatch.delenv(name, raising=False)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def settings(tmp_path: Path) -> Settings:
    return Settings(
        _env_file=None,
        var_dir=tmp_path / "var",
        jar_cache=tmp_path / "jars",
        bootstrap_servers="kafka-1:9092,kafka-2:9092",
        security_protocol="PLAINTEXT",
        spark_master="spark://master:7077",
        spark_driver_memory="3g",
    )


def jar_cache(tmp_path: Path) -> list[Path]:
    """The cache's two sets: the Kafka connector (several jars) and the join's operator."""
    paths = [
        tmp_path / "jars" / "spark-kafka" / "spark-sql-kafka.jar",
        tmp_path / "jars" / "spark-kafka" / "kafka-clients.jar",
        tmp_path / "jars" / "boardstream-jvm" / "boardstream-jvm.jar",
    ]
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    (tmp_path / "jars" / "spark-kafka" / ".pom").write_text("not a jar")
    return [paths[1], paths[0], paths[2]]  # sorted within each set, sets in classpath order


def test_each_job_runs_its_script_under_jobs() -> None:
    assert submit.JOBS == {
        "board-detail-join": "board_detail_join.py",
        "board-detail-sink": "board_detail_sink.py",
        "reconcile": "reconcile.py",
        "board-detail-repair": "repair.py",
        "table-count": "table_count.py",
        "session-count": "session_count.py",
        "window-count": "window_count.py",
    }
    for job, script in submit.JOBS.items():
        assert submit.application(job) == PROJECT_ROOT / "jobs" / script
        assert submit.application(job).is_file()


def test_an_unknown_job_names_the_known_ones_sorted() -> None:
    with pytest.raises(BoardstreamError) as raised:
        submit.application("board-detail-joint")
    assert str(raised.value) == (
        "unknown job 'board-detail-joint'; known jobs: board-detail-join, board-detail-repair, "
        "board-detail-sink, reconcile, session-count, table-count, window-count"
    )


def test_workers_run_this_interpreter_and_spark_logs_as_configured() -> None:
    assert submit.submit_conf(console=False) == {
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.driver.defaultJavaOptions": WARN,
        "spark.executor.defaultJavaOptions": WARN,
        "spark.ui.showConsoleProgress": "false",
    }
    assert submit.submit_conf(console=True)["spark.ui.showConsoleProgress"] == "true"


def test_the_environment_puts_this_venv_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert submit.submit_env() == {
        "SPARK_HOME": str(SPARK_HOME),
        "PYSPARK_PYTHON": sys.executable,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin",
    }


def test_the_environment_carries_the_kafka_connection_when_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/bin")
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    env = submit.submit_env(settings(tmp_path))
    assert env == {
        "SPARK_HOME": str(SPARK_HOME),
        "PYSPARK_PYTHON": sys.executable,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}/bin",
        "BOARDSTREAM_BOOTSTRAP_SERVERS": "kafka-1:9092,kafka-2:9092",
        "BOARDSTREAM_SECURITY_PROTOCOL": "PLAINTEXT",
    }  # no SPARK_LOCAL_IP: the master's host (master) does not resolve here, Spark decides
    local = settings(tmp_path).model_copy(update={"spark_master": "local[2]"})
    assert submit.submit_env(local)["SPARK_LOCAL_IP"] == "127.0.0.1"


def test_connector_jars_come_from_the_cache_comma_separated(tmp_path: Path) -> None:
    jars = jar_cache(tmp_path)
    assert submit.connector_jars(settings(tmp_path)) == ",".join(str(jar) for jar in jars)


def test_a_missing_jar_set_says_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(BoardstreamError) as raised:
        submit.connector_jars(settings(tmp_path))
    assert str(raised.value) == (
        f"no spark-kafka jars in {tmp_path / 'jars' / 'spark-kafka'}; run `boardstream setup` "
        "(or bin/setup) once with Maven Central reachable"
    )


def test_the_submit_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jars = jar_cache(tmp_path)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a log, not a terminal
    command = submit.submit_command(settings(tmp_path), "reconcile", ["--mode", "full"])
    assert command == [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master",
        "spark://master:7077",
        "--name",
        "reconcile",
        "--driver-memory",
        "3g",
        "--jars",
        ",".join(str(jar) for jar in jars),
        "--conf",
        f"spark.pyspark.python={sys.executable}",
        "--conf",
        f"spark.pyspark.driver.python={sys.executable}",
        "--conf",
        f"spark.driver.defaultJavaOptions={WARN} {PARALLEL}",
        "--conf",
        f"spark.executor.defaultJavaOptions={WARN} {PARALLEL}",
        "--conf",
        "spark.ui.showConsoleProgress=false",
        str(PROJECT_ROOT / "jobs" / "reconcile.py"),
        "--mode",
        "full",
    ]


def test_a_short_lived_submit_gives_the_driver_c1_only_beside_its_logging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jar_cache(tmp_path)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    usual = submit.submit_command(settings(tmp_path), "reconcile", [])
    brief = submit.submit_command(settings(tmp_path), "reconcile", [], short_lived=True)
    driver = f"spark.driver.defaultJavaOptions={WARN} {PARALLEL}"
    assert driver in usual
    assert [arg for arg in brief if arg not in usual] == [f"{driver} -XX:TieredStopAtLevel=1"]
    assert [arg for arg in usual if arg not in brief] == [driver]


def test_progress_bars_only_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jar_cache(tmp_path)
    monkeypatch.setattr(sys, "stderr", Terminal())
    command = submit.submit_command(settings(tmp_path), "table-count", [])
    assert "spark.ui.showConsoleProgress=true" in command
    assert command[-1] == str(PROJECT_ROOT / "jobs" / "table_count.py")


def test_an_unknown_job_has_no_command(tmp_path: Path) -> None:
    jar_cache(tmp_path)
    with pytest.raises(BoardstreamError, match=r"^unknown job 'nope'; known jobs: "):
        submit.submit_command(settings(tmp_path), "nope", [])
