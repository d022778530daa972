"""Will a job's largest record fit? Checked at job start, against the producer's request size
and each output topic's ``max.message.bytes``.

A record larger than either fails its write; Spark then fails the micro-batch, after other
records of it were already written, and the rerun meets the same record: the job stalls for
good. Refusing to start, naming the limit to raise, is the only safe answer.
"""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka.admin import AdminClient

from boardstream.errors import InvalidOptionError
from boardstream.kafka.clients import require_topics, topic_configs
from boardstream.settings import Settings

# Defaults of the producers' request limits: the Java client's (Spark's Kafka sink) and
# librdkafka's (confluent-kafka).
JAVA_MAX_REQUEST_SIZE = 1_048_576
LIBRDKAFKA_MESSAGE_MAX_BYTES = 1_000_000


def spark_producer_limit(options: Mapping[str, str]) -> tuple[str, int]:
    """The Spark Kafka sink's ``max.request.size`` for these writer options."""
    value = options.get("kafka.max.request.size", JAVA_MAX_REQUEST_SIZE)
    return "the producer's max.request.size (kafka.max.request.size)", int(value)


def librdkafka_producer_limit(config: Mapping[str, object]) -> tuple[str, int]:
    """A confluent-kafka producer's ``message.max.bytes`` for this config."""
    value = config.get("message.max.bytes", LIBRDKAFKA_MESSAGE_MAX_BYTES)
    return "the producer's message.max.bytes", int(str(value))


def topic_message_limits(
    admin: AdminClient, settings: Settings, topics: list[str]
) -> dict[str, int]:
    """``max.message.bytes`` of each topic (its own setting or the broker's default)."""
    require_topics(admin, settings, topics)
    return {
        topic: int(entries["max.message.bytes"].value)
        for topic, entries in topic_configs(admin, settings, topics).items()
    }


def require_fit(
    admin: AdminClient,
    settings: Settings,
    producer: tuple[str, int],
    largest: Mapping[str, tuple[int, str]],
    bound_by: str | None = None,
) -> None:
    """Raise unless every topic's largest record (``topic -> (bytes, what it is)``) fits the
    producer's limit and the topic's ``max.message.bytes``; ``bound_by`` names the option that
    bounds the records, if one does (the error then names it as the other remedy)."""
    producer_name, producer_limit = producer
    topic_limits = topic_message_limits(admin, settings, sorted(largest))
    problems = []
    for topic, (size, what) in sorted(largest.items()):
        limits = [
            (producer_name, producer_limit),
            (f"max.message.bytes of topic {topic}", topic_limits[topic]),
        ]
        for name, limit in limits:
            if size > limit:
                problems.append(f"{what} can be {size:,} bytes, more than {name} ({limit:,})")
    if problems:
        remedy = f"Raise the limit, or lower the {bound_by}" if bound_by else "Raise the limit"
        raise InvalidOptionError(
            "refusing to start: a record could be too large to write, which would fail its "
            f"batch on every run: {'; '.join(problems)}. {remedy}.",
            *([bound_by] if bound_by else []),
        )
