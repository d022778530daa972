"""Logs that tell the truth: Great Expectations says nothing of a passing validation and
nothing when imported; a Spark session built for a log (not a terminal) draws no progress bars
and logs through boardstream's log4j configuration; progress lines appear, as written, only
once an entry point configures logging."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from boardstream.logs import LOG4J2, VERBOSE_ENV, spark_conf
from boardstream.reconcile.evidence.expectations import Subject, validate_reconciliation
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import PROJECT_ROOT, Settings


def test_a_passing_validation_logs_nothing_from_great_expectations(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    table = pd.DataFrame({"board_id": ["b1", "b2"], "member_id": [1, 2]})
    empty = pd.DataFrame({"board_id": pd.Series(dtype=object)})
    report = validate_reconciliation(
        Subject.of(ReconcileTarget.shipped(Settings())),
        table,
        2,
        {"missing": empty, "mismatched": pd.DataFrame()},
        tmp_path,
        "reconciliation-1",
        keep_runs=1,
    )
    assert report.success
    gx = [r for r in caplog.records if r.name.split(".")[0] == "great_expectations"]
    assert [(r.levelname, r.getMessage()) for r in gx] == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def _python(tmp_path: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``code`` as a script in a fresh interpreter (imports and JVM as a job starts them), its
    stderr a pipe. A script, not ``-c``: pyspark takes a main module without a file for a
    doctest run and exits."""
    (result,) = _pythons(tmp_path, code, [env])
    return result


def _pythons(
    tmp_path: Path, code: str, envs: list[dict[str, str]]
) -> list[subprocess.CompletedProcess[str]]:
    """``code`` run once per environment in ``envs``, the interpreters side by side (an import
    of Great Expectations takes most of half a minute)."""
    script = tmp_path / "script.py"
    script.write_text(code)
    base = {k: v for k, v in os.environ.items() if k != VERBOSE_ENV}
    running = [
        subprocess.Popen(
            [sys.executable, "-W", "default", str(script)],  # warnings shown, as Airflow does
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=PROJECT_ROOT,
            env={**base, **env},
        )
        for env in envs
    ]
    results = []
    for process in running:
        stdout, stderr = process.communicate(timeout=300)
        results.append(
            subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
        )
    return results


IMPORT_GX = (
    "import logging\nlogging.basicConfig(level=logging.INFO)\n"
    "import boardstream.reconcile.evidence.expectations\nprint('imported')\n"
)


def test_importing_great_expectations_is_silent_unless_verbose(tmp_path: Path) -> None:
    quiet, verbose = _pythons(tmp_path, IMPORT_GX, [{}, {VERBOSE_ENV: "1"}])
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "imported\n", "")
    assert (verbose.returncode, verbose.stdout) == (0, "imported\n")
    assert "INFO:great_expectations._docs_decorators:Skipping registering" in verbose.stderr


@pytest.mark.integration  # starts Spark's JVM
def test_a_session_built_for_a_log_draws_no_progress_bars(tmp_path: Path) -> None:
    built = _python(
        tmp_path,
        "from boardstream.settings import Settings\n"
        "from boardstream.spark.session import spark_session\n"
        "spark = spark_session(Settings(), 'no-tty', master='local[1]')\n"
        "sc = spark.sparkContext\n"
        "spark.range(1000).selectExpr('sum(id)').collect()\n"
        "print(sc.getConf().get('spark.ui.showConsoleProgress'),"
        " sc._jsc.sc().progressBar().isDefined())\n"
        "spark.stop()\n",
    )
    assert (built.returncode, built.stdout) == (0, "false False\n"), built.stderr[-3000:]
    # boardstream's log4j configuration, not Spark's default one (INFO, and its banner).
    assert "Using Spark's default log4j profile" not in built.stderr
    assert " INFO " not in built.stderr and "[Stage" not in built.stderr


@pytest.mark.integration  # starts Spark's JVM
def test_a_short_lived_sessions_jvm_runs_with_c1_only(tmp_path: Path) -> None:
    """The option reaches the JVM itself (its input arguments and the flag's value as the
    running VM reports it), beside boardstream's logging options."""
    built = _python(
        tmp_path,
        "from boardstream.settings import Settings\n"
        "from boardstream.spark.session import spark_session\n"
        "spark = spark_session(Settings(), 'brief', master='local[1]', short_lived=True)\n"
        "jvm = spark.sparkContext._jvm\n"
        "bean = jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()\n"
        "arguments = list(bean.getInputArguments())\n"
        "hotspot = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(\n"
        "    jvm.com.sun.management.HotSpotDiagnosticMXBean._java_lang_class)\n"
        "print('-XX:TieredStopAtLevel=1' in arguments,"
        " any(a.startswith('-Dlog4j2.configurationFile=') for a in arguments),"
        " hotspot.getVMOption('TieredStopAtLevel').getValue())\n"
        "spark.stop()\n",
    )
    assert (built.returncode, built.stdout) == (0, "True True 1\n"), built.stderr[-3000:]


@pytest.mark.parametrize(("verbose", "level"), [("", "warn"), ("1", "info")])
def test_spark_logs_at_warn_unless_verbose(
    monkeypatch: pytest.MonkeyPatch, verbose: str, level: str
) -> None:
    monkeypatch.setenv(VERBOSE_ENV, verbose)
    options = f"-Dlog4j2.configurationFile={LOG4J2} -Dboardstream.spark.log.level={level}"
    assert spark_conf(console=True) == {
        "spark.driver.defaultJavaOptions": options,
        "spark.executor.defaultJavaOptions": options,
        "spark.ui.showConsoleProgress": "true",
    }
    assert LOG4J2.is_file()


PROGRESS_SCRIPT = (
    "import logging, sys\n"
    "from boardstream.logs import configure\n"
    "from boardstream.progress import Progress\n"
    "if sys.argv[1:] == ['configured']:\n"
    "    configure(verbose=False)\n"
    "logging.getLogger('boardstream.reconcile').info('phase one: 1.0s')\n"
    "progress = Progress('produce', 2000, interval_s=0)\n"
    "progress.advance(500)\n"
    "progress.finish()\n"
)


def test_progress_lines_read_as_written_once_an_entry_point_configures_logging(
    tmp_path: Path,
) -> None:
    script = tmp_path / "progress.py"
    script.write_text(PROGRESS_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != VERBOSE_ENV}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(script), *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            env=env,
        )

    quiet = run()
    assert (quiet.stdout, quiet.stderr) == ("", ""), "importing boardstream configures nothing"
    shown = run("configured").stderr.splitlines()
    assert shown[0] == "INFO boardstream.reconcile: phase one: 1.0s"
    assert re.fullmatch(r"produce: 500/2,000 \( 25\.0%\) [\d,]+/s ETA \d+s", shown[1]), shown
    assert re.fullmatch(r"produce: 500/2,000 \( 25\.0%\) [\d,]+/s done in \d+\.\ds", shown[2])
    assert len(shown) == 3, shown
