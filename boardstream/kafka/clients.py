"""confluent-kafka clients built from :class:`~boardstream.settings.Settings`.

librdkafka retries a missing broker forever and logs every attempt; boardstream instead asks
for metadata with a deadline and turns silence into one clear error.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, ClusterMetadata

from boardstream.errors import BrokerUnreachableError, UnknownTopicError
from boardstream.settings import Settings

# librdkafka's own connection chatter goes here; the CLI shows it only with --verbose.
LIBRDKAFKA_LOGGER = logging.getLogger("boardstream.librdkafka")


def client_config(settings: Settings, **overrides: Any) -> dict[str, Any]:
    return {**settings.to_confluent(), "logger": LIBRDKAFKA_LOGGER, **overrides}


def admin_client(settings: Settings) -> AdminClient:
    return AdminClient(client_config(settings))


def reliable_producer(settings: Settings, **overrides: Any) -> Producer:
    """A producer that cannot lose or duplicate on retry: acks=all plus idempotence."""
    return Producer(
        client_config(
            settings,
            **{"acks": "all", "enable.idempotence": True, "linger.ms": 20, **overrides},
        )
    )


@dataclass
class DeliveryErrors:
    """Counts failed deliveries; pass as ``on_delivery`` (with ``delivery.report.only.error``
    only failures are reported at all)."""

    count: int = 0
    first: str = ""

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.count += 1
            self.first = self.first or f"{message.topic()}: {error.str()}"


def cluster_metadata(admin: AdminClient, settings: Settings) -> ClusterMetadata:
    """Metadata, or :class:`BrokerUnreachableError` after ``settings.connect_timeout_s``."""
    try:
        return admin.list_topics(timeout=settings.connect_timeout_s)
    except KafkaException as error:
        raise BrokerUnreachableError(
            f"no Kafka broker answered at {settings.bootstrap_servers} within "
            f"{settings.connect_timeout_s:g}s ({error.args[0].str()}); is the stack up? "
            "(`boardstream stack up`)"
        ) from None


def require_topics(admin: AdminClient, settings: Settings, topics: list[str]) -> ClusterMetadata:
    """Metadata, after checking that every topic in ``topics`` exists."""
    metadata = cluster_metadata(admin, settings)
    missing = [topic for topic in topics if topic not in metadata.topics]
    if missing:
        raise UnknownTopicError(
            f"unknown topic(s) {', '.join(missing)} on {settings.bootstrap_servers}; "
            "create them with `boardstream topics create`"
        )
    return metadata
