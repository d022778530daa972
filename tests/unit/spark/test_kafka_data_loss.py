"""A query's aged-out input in one line: the reason of the Kafka source's
``KafkaIllegalStateException``, found among the causes of the stream's failure, without the
stack traces around it. (The real failure: tests/integration/test_sink.py.)"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from boardstream.spark.kafka_data_loss import KAFKA_DATA_LOSS, lost_input

# The connector's message (spark-sql-kafka 4.2.0) as a sink whose offsets 2 and 3 were deleted
# got it.
MESSAGE = (
    "Some data may have been lost because they are not available in Kafka any more;\neither the "
    "data was aged out by Kafka or the topic may have been deleted before all the data in the\n"
    "topic was processed.\nIf you don't want your streaming query to fail on such cases, set the "
    "source option failOnDataLoss to false.\nReason: Could not read records in offset [2, 5) for "
    "topic partition p0-board-detail-0\nwith consumer group spark-kafka-source-981f30db-executor."
)


@dataclass
class Java:
    """A Java exception as py4j shows one: its class, message, cause and condition."""

    name: str
    message: str = ""
    cause: Java | None = None
    condition: str = "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE"

    def getClass(self) -> SimpleNamespace:
        return SimpleNamespace(getName=lambda: self.name)

    def getMessage(self) -> str:
        return self.message

    def getCause(self) -> Java | None:
        return self.cause

    def getCondition(self) -> str:
        return self.condition


def failure(origin: Java | None) -> Exception:
    error = Exception("[STREAM_FAILED] ...")
    error._origin = origin  # type: ignore[attr-defined]  # what pyspark's captured errors keep
    return error


def test_the_reason_behind_a_wrapped_failure_is_one_line() -> None:
    lost = Java(KAFKA_DATA_LOSS, MESSAGE)
    chain = Java("StreamingQueryException", cause=Java("SparkException", cause=lost))
    assert lost_input(failure(chain)) == (
        "Could not read records in offset [2, 5) for topic partition p0-board-detail-0 "
        "(KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE)"
    )


@pytest.mark.parametrize(
    "origin",
    [None, Java("StreamingQueryException", "Python worker failed to connect back")],
)
def test_a_failure_without_a_data_loss_is_none(origin: Java | None) -> None:
    assert lost_input(failure(origin)) is None


def test_a_reason_the_connector_does_not_give_is_said() -> None:
    lost = Java(KAFKA_DATA_LOSS, "Some data may have been lost", condition="KAFKA_DATA_LOSS.X")
    assert lost_input(failure(lost)) == "no reason given (KAFKA_DATA_LOSS.X)"
