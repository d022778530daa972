"""A requested stop silences exactly the loggers that report the cancelled batch, on the real
driver JVM, and gives them back their levels afterwards (what a stop logs is held by
tests/integration/test_join_real_time.py)."""

from __future__ import annotations

from boardstream.spark import streaming

UNRELATED = "org.apache.spark.sql.execution.streaming.MicroBatchExecution"


def test_the_cancelled_batch_loggers_are_off_during_a_stop_and_as_before_after(spark) -> None:
    manager = spark.sparkContext._jvm.org.apache.logging.log4j.LogManager
    names = (*streaming.CANCELLED_BATCH_LOGGERS, UNRELATED)

    def levels() -> dict[str, str]:
        return {name: manager.getLogger(name).getLevel().toString() for name in names}

    before = levels()
    assert "OFF" not in before.values()
    with streaming.cancelled_batch_quieted(spark):
        during = levels()
    assert during == {
        **{name: "OFF" for name in streaming.CANCELLED_BATCH_LOGGERS},
        UNRELATED: before[UNRELATED],
    }
    assert levels() == before
