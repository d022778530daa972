"""confluent-kafka clients built from :class:`~boardstream.settings.Settings`.

librdkafka retries a missing broker forever and logs every attempt; boardstream instead asks
for metadata with a deadline and turns silence into one clear error.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import (
    AdminClient,
    ClusterMetadata,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from boardstream.errors import (
    BoardstreamError,
    BrokerUnreachableError,
    KafkaAuthenticationError,
    UnknownTopicError,
)
from boardstream.settings import Settings

# librdkafka's own connection chatter goes here; the CLI shows it only with --verbose.
LIBRDKAFKA_LOGGER = logging.getLogger("boardstream.librdkafka")


def client_config(settings: Settings, **overrides: Any) -> dict[str, Any]:
    return {**settings.to_confluent(), "logger": LIBRDKAFKA_LOGGER, **overrides}


class _AuthWatch:
    """librdkafka reports a rejected login or a failed TLS handshake only through ``error_cb``
    (a metadata request just times out); remember it so the caller can say so at once."""

    def __init__(self) -> None:
        self.error: KafkaError | None = None

    def __call__(self, error: KafkaError) -> None:
        if error.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL):
            self.error = error


class WatchedAdminClient(AdminClient):
    """An AdminClient that knows whether the broker rejected its credentials or certificate."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.auth = _AuthWatch()
        super().__init__({**config, "error_cb": self.auth})


def admin_client(settings: Settings) -> AdminClient:
    return WatchedAdminClient(client_config(settings))


def reliable_producer(settings: Settings, **overrides: Any) -> Producer:
    """A producer that cannot lose or duplicate on retry: acks=all plus idempotence. Keys are
    partitioned like Java clients do (murmur2), so a key lands where Spark's Kafka sink, Kafka
    Streams or any JVM producer would put it: topics joined by key stay co-partitioned."""
    defaults = {
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 20,
        "partitioner": "murmur2_random",
    }
    return Producer(client_config(settings, **{**defaults, **overrides}))


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
    deadline = time.monotonic() + settings.connect_timeout_s
    while True:
        try:
            # Short attempts: a rejected login is known within one, not at the deadline.
            return admin.list_topics(timeout=min(1.0, settings.connect_timeout_s))
        except KafkaException as error:
            admin.poll(0)  # serves error_cb
            rejected = getattr(admin, "auth", None)
            if rejected is not None and rejected.error is not None:
                if rejected.error.code() == KafkaError._SSL:
                    raise KafkaAuthenticationError(
                        f"Kafka at {settings.bootstrap_servers}: TLS handshake failed "
                        f"({rejected.error.str()}); check BOARDSTREAM_SSL_CA_LOCATION (now "
                        f"{settings.ssl_ca_location}): it must hold the CA that signed the "
                        "broker's certificate"
                    ) from None
                raise KafkaAuthenticationError(
                    f"Kafka at {settings.bootstrap_servers}: authentication failed for user "
                    f"{settings.sasl_username!r} ({settings.security_protocol}, "
                    f"{settings.sasl_mechanism}); check BOARDSTREAM_SASL_USERNAME and "
                    "BOARDSTREAM_SASL_PASSWORD"
                ) from None
            if time.monotonic() >= deadline:
                raise BrokerUnreachableError(
                    f"no Kafka broker answered at {settings.bootstrap_servers} within "
                    f"{settings.connect_timeout_s:g}s ({error.args[0].str()}); is the stack "
                    "up? (`boardstream stack up`)"
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


def topic_configs(
    admin: AdminClient, settings: Settings, topics: list[str]
) -> dict[str, dict[str, ConfigEntry]]:
    """Each topic's configs (name -> entry). A topic just created is unknown for a moment to
    the brokers that have not yet applied its creation (CreateTopics returns before every
    broker knows the topic, and librdkafka asks any broker), so UNKNOWN_TOPIC_OR_PART is
    retried until ``settings.connect_timeout_s``; any other error is raised at once."""
    deadline = time.monotonic() + settings.connect_timeout_s
    configs: dict[str, dict[str, ConfigEntry]] = {}
    pending = list(topics)
    while pending:
        futures = admin.describe_configs(
            [ConfigResource(ResourceType.TOPIC, topic) for topic in pending],
            request_timeout=settings.connect_timeout_s,
        )
        pending = []
        for resource, future in futures.items():
            try:
                configs[resource.name] = future.result()
            except KafkaException as error:
                unknown = error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
                if not unknown or time.monotonic() > deadline:
                    raise BoardstreamError(
                        f"reading the configs of {resource.name} failed: {error}"
                    ) from None
                pending.append(resource.name)
        if pending:
            time.sleep(0.2)
    return configs
