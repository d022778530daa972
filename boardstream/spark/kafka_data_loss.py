"""A query's Kafka input that lost records before the query read them, said in one line.

The Kafka source fails a query with ``failOnDataLoss`` (every boardstream stream sets it) when
offsets it has not read are gone: retention deleted them, or the topic was re-created. Spark's
error is a stage failure wrapping ``KafkaIllegalStateException`` and its stack traces; the user
needs what was lost, which its ``KAFKA_DATA_LOSS`` condition's reason says (the connector's
``error/kafka-error-conditions.json``).
"""

from __future__ import annotations

import re

from boardstream.errors import BoardstreamError

# "[KAFKA_DATA_LOSS.<SUBCLASS>] Some data may have been lost ... Reason:\n<reason> SQLSTATE: ..."
_CONDITION = re.compile(r"\[KAFKA_DATA_LOSS\.(?P<subclass>[A-Z_]+)\]")
_REASON_END = re.compile(r"\s+(?:SQLSTATE:|with consumer group\b|at org\.|at scala\.|Caused by:)")


class InputLostError(BoardstreamError):
    """Records of a query's input were deleted before the query read them."""


def lost_input(error: BaseException) -> str | None:
    """The one-line reason of a ``KAFKA_DATA_LOSS`` failure in ``error``, else None."""
    text = str(error)
    condition = _CONDITION.search(text)
    if condition is None:
        return None
    _, found, rest = text[condition.end() :].partition("Reason:")
    reason = " ".join(_REASON_END.split(rest, maxsplit=1)[0].split()) if found else ""
    return f"{reason.rstrip('.') or 'no reason given'} (KAFKA_DATA_LOSS.{condition['subclass']})"
