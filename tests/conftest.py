"""Session-scoped real services (one Kafka broker and one PostgreSQL for all integration tests)
and each test's tier marker, so `pytest -m unit` runs the tests that start no service."""

from __future__ import annotations

import logging
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from boardstream.logs import LIBRARIES
from boardstream.settings import Settings
from boardstream.stack.kafka_broker import KafkaBroker
from boardstream.stack.postgres import Postgres
from tests.fixtures import isolated_settings, world_readable_dir

# Fixtures more than one module takes: Airflow's, and the orders table's (orders_url).
pytest_plugins = ["tests.airflow_fixtures", "tests.integration.orders_table"]

TIERS = ("unit", "integration", "faults", "dags")
# The tier of each test folder: the adversarial suite runs on the integration tests' stack.
FOLDER_TIERS = {
    "unit": "unit",
    "integration": "integration",
    "adversarial": "integration",
    "faults": "faults",
    "dags": "dags",
}
TESTS = Path(__file__).parent
# What a module left running (a streaming query in the shared session, a job's driver): on 2
# cores one slows every test after it. Named at the end of the run, with each tier's minutes.
LEFT_RUNNING: list[str] = []
TIER_SECONDS: dict[str, float] = defaultdict(float)
# A job's driver as the tests start one: spark-submit of a job script, or the CLI in a process.
JOB_MARKERS = ("boardstream.entrypoints", f"{TESTS.parent / 'jobs'}/")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long",
        action="store_true",
        help="also run the tests marked long (end-to-end scenarios of minutes each; CI leaves "
        "them out, see docs/DEVELOPMENT.md, 'Tests')",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test marked with its folder's tier, unless it names its own (a test in tests/unit
    that starts Spark is marked integration); the long ones deselected (and counted as such in
    the summary) unless --long is given."""
    for item in items:
        if any(item.get_closest_marker(tier) for tier in TIERS):
            continue
        folder = item.path.relative_to(TESTS).parts[0]
        item.add_marker(FOLDER_TIERS[folder])
    if config.getoption("--long"):
        return
    long = [item for item in items if item.get_closest_marker("long")]
    if long:
        config.hook.pytest_deselected(items=long)
        items[:] = [item for item in items if not item.get_closest_marker("long")]


@pytest.fixture(autouse=True, scope="module")
def nothing_left_running(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each module: a streaming query still active in the shared Spark session is
    stopped, and it and any job driver still running under this process are named in the
    run's summary (a leak a test should not have; it costs every later test its CPU)."""
    yield
    module = request.module.__name__.removeprefix("tests.")
    if "pyspark.sql" in sys.modules:
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
        for query in session.streams.active if session is not None else []:
            LEFT_RUNNING.append(f"{module}: streaming query {query.name or query.id} (stopped)")
            query.stop()
    for child in psutil.Process().children(recursive=True):
        try:
            command = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if any(marker in command for marker in JOB_MARKERS):
            LEFT_RUNNING.append(f"{module}: pid {child.pid} {command[:160]}")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    tier = next((t for t in TIERS if t in report.keywords), "other")
    TIER_SECONDS[tier] += report.duration


def pytest_terminal_summary(terminalreporter) -> None:
    """Where the run's time went, by tier, and what modules left running."""
    tiers = ", ".join(f"{t} {s / 60:.1f}" for t, s in sorted(TIER_SECONDS.items()))
    terminalreporter.write_line(f"minutes by tier: {tiers}")
    for leak in LEFT_RUNNING:
        terminalreporter.write_line(f"left running by {leak}")


@pytest.fixture(autouse=True)
def library_log_levels() -> Iterator[None]:
    """An entry point run in-process with --verbose opens the libraries' loggers (logs.configure)
    for the rest of the process: each test gets back the levels it started with."""
    names = (*LIBRARIES, "boardstream.librdkafka")
    levels = {name: logging.getLogger(name).level for name in names}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@pytest.fixture
def t0() -> int:
    """A test's first record time: now, as a producer stamps it. A time taken when its module
    was imported made a board as old as the suite's run so far, and a reconciliation 25 minutes
    into a slow run found the join stalled at it (the liveness check takes a record's timestamp
    for when it was written; the join's unmatched timeout counts from it too)."""
    return int(time.time() * 1000)


@pytest.fixture(scope="session")
def stack_settings() -> Iterator[Settings]:
    var_dir = world_readable_dir("boardstream-test-")
    yield isolated_settings(var_dir)
    shutil.rmtree(var_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def kafka(stack_settings: Settings) -> Iterator[Settings]:
    """A real KRaft broker, started through the same code as `boardstream stack up`."""
    broker = KafkaBroker(stack_settings)
    broker.start()
    yield stack_settings
    broker.process.stop()


@pytest.fixture(scope="session")
def spark(kafka):
    """One local Spark session (with the Kafka connector) for every Spark test."""
    from boardstream.spark.session import spark_session

    session = spark_session(kafka, "boardstream-tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def checkpoint_files(spark):
    """Checkpoint files through the test session's Hadoop filesystems."""
    from boardstream.spark.checkpoint_files import CheckpointFiles

    return CheckpointFiles(spark)


@pytest.fixture(scope="session")
def postgres(stack_settings: Settings) -> Iterator[Settings]:
    server = Postgres(stack_settings)
    server.start()
    yield stack_settings.model_copy(update={"database_url": server.url})
    server.process.stop()
