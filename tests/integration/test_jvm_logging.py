"""A driver started in this process (as the reconciliation task starts one) hands its JVM's
log lines to logging at their own level: a healthy notice stays a warning, a real Spark error is
still an error, so a quiet task log is not a silenced one."""

from __future__ import annotations

import logging
import time

import pytest

pytestmark = pytest.mark.integration


def test_a_jvm_error_reaches_logging_at_error(spark, caplog: pytest.LogCaptureFixture) -> None:
    jvm_logger = spark.sparkContext._jvm.org.apache.logging.log4j.LogManager.getLogger(
        "boardstream.test"
    )
    with caplog.at_level(logging.DEBUG, logger="boardstream.spark.jvm"):
        jvm_logger.error("deliberate error line")
        jvm_logger.info("an INFO line the WARN level drops")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not ours(caplog):
            time.sleep(0.2)
        time.sleep(1)  # the INFO line, were it let through, comes right after
    assert ours(caplog) == [(logging.ERROR, "ERROR test: deliberate error line")]


def ours(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    """This test's JVM lines (logger ``test``), without their timestamp."""
    return [
        (r.levelno, r.getMessage().split(" ", 2)[2])
        for r in caplog.records
        if " test: " in r.getMessage()
    ]
