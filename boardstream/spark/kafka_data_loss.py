"""A query's Kafka input that lost records before the query read them, said in one line.

The Kafka source fails a query with ``failOnDataLoss`` (every boardstream stream sets it) when
offsets it has not read are gone: retention deleted them, or the topic was re-created. What
reaches the driver is a stream failure whose cause chain holds the connector's
``KafkaIllegalStateException`` among stage failures and stack traces (a ``foreachBatch`` sink's
wraps it once more); the user needs what was lost, which that exception's reason says (its
``KAFKA_DATA_LOSS`` condition, the connector's ``error/kafka-error-conditions.json``).
"""

from __future__ import annotations

import re
from typing import Any

from py4j.protocol import Py4JError

from boardstream.errors import BoardstreamError

KAFKA_DATA_LOSS = "org.apache.spark.sql.kafka010.KafkaIllegalStateException"
# "... Reason: Could not read records in offset [2, 5) for topic partition t-0\nwith consumer
# group spark-kafka-source-…." : the reason, without the consumer group Spark made up.
_REASON_END = re.compile(r"\s+(?:with consumer group\b|SQLSTATE:)")
_MAX_CAUSES = 32  # a cause chain is short; this only bounds a cyclic one


class InputLostError(BoardstreamError):
    """Records of a query's input were deleted before the query read them."""


def lost_input(error: BaseException) -> str | None:
    """The one-line reason of the Kafka source's data loss behind ``error`` (a captured Spark
    exception: its Java exception's causes are searched), else None."""
    cause: Any = getattr(error, "_origin", None)
    for _ in range(_MAX_CAUSES):
        if cause is None:
            return None
        if cause.getClass().getName() == KAFKA_DATA_LOSS:
            return reason(str(cause.getMessage()), _condition(cause))
        cause = cause.getCause()
    return None


def reason(message: str, condition: str) -> str:
    """``message``'s reason on one line, with the condition that named it."""
    _, found, rest = message.partition("Reason:")
    said = " ".join(_REASON_END.split(rest, maxsplit=1)[0].split()) if found else ""
    return f"{said.rstrip('.') or 'no reason given'} ({condition})"


def _condition(java: Any) -> str:
    try:
        return str(java.getCondition())
    except Py4JError:  # a connector older than Spark 4's SparkThrowable.getCondition
        return "KAFKA_DATA_LOSS"
