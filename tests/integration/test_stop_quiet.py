"""A requested stop sets every logger of the real driver JVM to FATAL, those with levels of their
own in boardstream's log4j configuration and those that inherit the root's alike (what a stop
logs is held by tests/integration/test_join_real_time.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from boardstream.spark import streaming

# One logger that inherits the root's level, one with a level of its own in
# boardstream/spark/log4j2.properties, and one a cancelled real-time batch logged under.
INHERITS = "org.apache.spark.sql.execution.streaming.MicroBatchExecution"
CONFIGURED = "org.apache.spark.sql.execution.streaming.state.StateStoreProvider"
SHUFFLE_READER = "org.apache.spark.shuffle.streaming.StreamingShuffleReader"


@pytest.fixture
def levels_restored(spark) -> Iterator[None]:
    """The shared session's logger levels as they were, after the test."""
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    configuration = log4j.LogManager.getContext(False).getConfiguration()
    before = {name: config.getLevel() for name, config in configuration.getLoggers().items()}
    yield
    for name, level in before.items():
        log4j.core.config.Configurator.setLevel(name, level)


def test_a_requested_stop_leaves_only_fatal_in_the_jvm(spark, levels_restored) -> None:
    manager = spark.sparkContext._jvm.org.apache.logging.log4j.LogManager
    names = (INHERITS, CONFIGURED, SHUFFLE_READER, manager.ROOT_LOGGER_NAME)

    def levels() -> dict[str, str]:
        return {name: manager.getLogger(name).getLevel().toString() for name in names}

    before = levels()
    # The shared session logs ERROR and up (tests/conftest.py), boardstream's drivers WARN.
    assert before == {INHERITS: "ERROR", CONFIGURED: "ERROR", SHUFFLE_READER: "ERROR", "": "ERROR"}
    assert manager.getLogger(SHUFFLE_READER).isErrorEnabled()
    streaming.quiet_jvm_logging(spark)
    assert levels() == dict.fromkeys(names, "FATAL")
    assert not manager.getLogger(SHUFFLE_READER).isErrorEnabled()
    assert manager.getLogger(SHUFFLE_READER).isFatalEnabled()
