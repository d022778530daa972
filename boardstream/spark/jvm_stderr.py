"""Spark's JVM output as log records: a driver started in this process (reconciliation in an
Airflow task, the CLI's commands) writes its log4j lines and the JVM's own notices to stderr,
which Airflow files at ERROR whatever they say. Read through a pipe instead, each line is logged
at the level its log4j pattern (``yy/MM/dd HH:mm:ss LEVEL logger: message``) names, so a healthy
run has no ERROR line and a real Spark error still has one."""

from __future__ import annotations

import logging
import re
import threading
from typing import IO

logger = logging.getLogger("boardstream.spark.jvm")

LEVELS = {
    "TRACE": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "WARNING:": logging.WARNING,  # the JVM's own notices ("WARNING: Using incubator modules")
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
}
LOG4J_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (\w+) |^(WARNING:) ")


def line_level(line: str, previous: int) -> int:
    """A log4j line's level; a line without one (a stack trace's ``at …``, a wrapped message)
    belongs to the record before it, or is a warning when nothing came before."""
    match = LOG4J_LINE.match(line)
    if match is None:
        return previous
    return LEVELS.get(match.group(1) or match.group(2), logging.WARNING)


def forward(stream: IO[bytes]) -> threading.Thread:
    """Log every line of ``stream`` (the JVM's stderr) until it closes, on a daemon thread."""

    def pump() -> None:
        level = logging.WARNING
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip()
            if line:
                level = line_level(line, level)
                logger.log(level, "%s", line)

    thread = threading.Thread(target=pump, name="spark-jvm-stderr", daemon=True)
    thread.start()
    return thread
