"""The Kafka provider's admin hook, plus boardstream settings pointing at the same cluster."""

from __future__ import annotations

from airflow.providers.apache.kafka.hooks.client import KafkaAdminClientHook

from boardstream.settings import Settings


class BoardstreamKafkaHook(KafkaAdminClientHook):
    """The connection (``kafka_default`` unless told otherwise) decides the cluster: its extra
    JSON (``bootstrap.servers``, ``security.protocol``, ``sasl.*``, ``ssl.ca.location``) replaces
    the ``BOARDSTREAM_*`` Kafka settings for the core code, and :attr:`get_conn` is the
    provider's own AdminClient built from that extra."""

    def settings(self) -> Settings:
        config = self.get_connection(self.kafka_config_id).extra_dejson
        servers = config.get("bootstrap.servers")
        if not servers:
            raise ValueError(
                f"Airflow connection {self.kafka_config_id!r} has no bootstrap.servers in its"
                " extra JSON"
            )
        return Settings().with_kafka_config(config)
