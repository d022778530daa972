"""Topics are created on a real broker with the configs and partition counts asked for."""

from __future__ import annotations

from confluent_kafka.admin import ConfigResource, ResourceType

from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import create_topics, describe_topics, platform_topics


def test_create_is_idempotent_and_configs_read_back(kafka) -> None:
    settings = kafka.with_topic_prefix("t", member_partitions=2, board_partitions=4)
    admin = admin_client(settings)
    specs = platform_topics(settings)
    first = create_topics(admin, settings, specs)
    assert [(r.topic, r.created) for r in first] == [
        ("t-member", True),
        ("t-board", True),
        ("t-board-detail", True),
        ("t-board-unmatched", True),
        ("t-board-dlq", True),
        ("t-board-join-tick", True),
    ]
    again = create_topics(admin, settings, specs)
    assert [r.created for r in again] == [False] * 6

    resources = [ConfigResource(ResourceType.TOPIC, s.name) for s in specs]
    policies = {
        resource.name: future.result()["cleanup.policy"].value
        for resource, future in admin.describe_configs(resources).items()
    }
    assert policies == {
        "t-member": "compact",
        "t-board": "delete",
        "t-board-detail": "delete",
        "t-board-unmatched": "delete",
        "t-board-dlq": "delete",
        "t-board-join-tick": "delete",
    }
    described = {d.name: d for d in describe_topics(admin, settings, [s.name for s in specs])}
    assert described["t-member"].partitions == 2
    assert described["t-board"].partitions == 4
    assert described["t-board-detail"].partitions == 3
    assert described["t-board-join-tick"].partitions == 1  # one tick per run, in order
    assert described["t-board-join-tick"].configs["retention.ms"] == (str(24 * 3600 * 1000), False)
    assert described["t-member"].configs["cleanup.policy"] == ("compact", False)
    assert all(offset == 0 for offset in described["t-board"].end_offsets.values())
