"""The JVM's stderr lines are logged at the level they state, never all at one level."""

from __future__ import annotations

import logging
import os

import pytest

from boardstream.spark.jvm_stderr import forward, line_level


@pytest.mark.parametrize(
    ("line", "level"),
    [
        ("26/11/23 22:09:25 WARN Utils: Set SPARK_LOCAL_IP", logging.WARNING),
        ("26/11/23 22:09:25 INFO SparkContext: Running Spark version 4.3.0", logging.INFO),
        ("26/11/23 22:09:25 ERROR Executor: Exception in task 0.0", logging.ERROR),
        ("WARNING: Using incubator modules: jdk.incubator.vector", logging.WARNING),
        ("\tat org.apache.spark.executor.Executor.run(Executor.scala:1)", logging.DEBUG),
    ],
)
def test_a_line_is_logged_at_the_level_it_states(line: str, level: int) -> None:
    # DEBUG stands for the level of the record before, which a continuation line keeps.
    assert line_level(line, logging.DEBUG) == level


def test_a_stack_trace_stays_at_its_errors_level(caplog: pytest.LogCaptureFixture) -> None:
    read, write = os.pipe()
    lines = (
        b"WARNING: Using incubator modules: jdk.incubator.vector\n"
        b"26/11/23 22:09:25 ERROR Executor: Exception in task 0.0\n"
        b"java.lang.IllegalStateException: boom\n"
        b"\n"
        b"26/11/23 22:09:26 INFO Executor: Finished task 1.0\n"
    )
    with (
        caplog.at_level(logging.DEBUG, logger="boardstream.spark.jvm"),
        os.fdopen(read, "rb") as stream,
    ):
        os.write(write, lines)
        os.close(write)
        forward(stream).join(timeout=10)
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, "WARNING: Using incubator modules: jdk.incubator.vector"),
        (logging.ERROR, "26/11/23 22:09:25 ERROR Executor: Exception in task 0.0"),
        (logging.ERROR, "java.lang.IllegalStateException: boom"),
        (logging.INFO, "26/11/23 22:09:26 INFO Executor: Finished task 1.0"),
    ]
