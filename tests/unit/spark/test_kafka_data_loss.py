"""A query's aged-out input in one line: the reason the Kafka source's ``KAFKA_DATA_LOSS``
condition gives, without the stage failure's stack traces around it."""

from __future__ import annotations

import pytest

from boardstream.spark.kafka_data_loss import lost_input

# What a StreamingQueryException of the sink read as, its input's first offsets deleted (Spark
# 4.3.0, spark-sql-kafka 4.2.0), cut to its first lines.
AGED_OUT = (
    "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Job aborted due to "
    "stage failure: Task 0 in stage 3.0 failed 1 times, most recent failure: Lost task 0.0 in "
    "stage 3.0 (TID 7) (127.0.0.1 executor driver): org.apache.spark.sql.kafka010."
    "KafkaIllegalStateException: [KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE] Some data may "
    "have been lost because they are not available in Kafka any more;\neither the data was aged "
    "out by Kafka or the topic may have been deleted before all the data in the\ntopic was "
    "processed.\nIf you don't want your streaming query to fail on such cases, set the source "
    "option failOnDataLoss to false.\nReason:\nCould not read records in offset [0, 57) for "
    "topic partition board-detail-2\nwith consumer group spark-kafka-source-9f-executor. "
    "SQLSTATE: 22000\n\tat org.apache.spark.sql.kafka010.KafkaExceptions$.couldNotReadOffsetRange"
)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            AGED_OUT,
            "Could not read records in offset [0, 57) for topic partition board-detail-2 "
            "(KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE)",
        ),
        (
            "x: [KAFKA_DATA_LOSS.START_OFFSET_RESET] Some data may have been lost ...\nReason:\n"
            "Starting offset for board-detail-0 was 5 but consumer reset to 90. SQLSTATE: 22000",
            "Starting offset for board-detail-0 was 5 but consumer reset to 90 "
            "(KAFKA_DATA_LOSS.START_OFFSET_RESET)",
        ),
        (
            "[KAFKA_DATA_LOSS.PARTITIONS_DELETED] lost",
            "no reason given (KAFKA_DATA_LOSS.PARTITIONS_DELETED)",
        ),
        ("Python worker failed to connect back", None),
    ],
)
def test_the_reason_of_a_data_loss_is_one_line(message: str, expected: str | None) -> None:
    assert lost_input(RuntimeError(message)) == expected
