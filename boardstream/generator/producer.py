"""``boardstream produce``: send a :class:`Plan` to Kafka reliably and write its manifest."""

from __future__ import annotations

from pathlib import Path

from boardstream.errors import BoardstreamError
from boardstream.generator.manifest import Manifest
from boardstream.generator.plan import STREAM, TABLE, GeneratorOptions, Plan
from boardstream.joins.topics import Deployed
from boardstream.kafka.clients import (
    DeliveryErrors,
    admin_client,
    reliable_producer,
    require_topics,
)
from boardstream.progress import Progress
from boardstream.settings import Settings


def produce(
    settings: Settings,
    options: GeneratorOptions,
    manifest_path: Path,
    progress_interval_s: float = 2.0,
    producer_overrides: dict | None = None,
    deployed: Deployed | None = None,
) -> Manifest:
    """Produce every planned record of ``deployed`` (the shipped pipeline on the settings'
    topics if None) to its table and stream topics, with acks=all and idempotence; fail if any
    was not acked."""
    deployed = Deployed.shipped(settings) if deployed is None else deployed
    plan = Plan(options, deployed.pipeline)
    topics = {TABLE: deployed.topics.table, STREAM: deployed.topics.stream}
    require_topics(admin_client(settings), settings, list(topics.values()))
    errors = DeliveryErrors()
    producer = reliable_producer(
        settings,
        **{
            "delivery.report.only.error": True,
            "on_delivery": errors,
            "compression.type": "lz4",
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": 262_144,
            **(producer_overrides or {}),
        },
    )
    manifest = Manifest.start(options, topics)
    progress = Progress("produce", plan.size, interval_s=progress_interval_s)
    for record in plan:
        topic = topics[record.topic]
        while True:
            try:
                producer.produce(topic, value=record.value, key=record.key)
                break
            except BufferError:
                producer.poll(0.05)  # local queue full: let deliveries drain, then retry
        manifest.add(record)
        progress.advance()
        if progress.done % 10_000 == 0:
            producer.poll(0)
    remaining = producer.flush(settings.connect_timeout_s * 6)
    progress.finish()
    if remaining or errors.count:
        raise BoardstreamError(
            f"{errors.count + remaining} of {plan.size} records were not acknowledged by "
            f"{settings.bootstrap_servers} (first error: {errors.first or 'flush timed out'}); "
            "no manifest written"
        )
    manifest.write(manifest_path)
    return manifest
