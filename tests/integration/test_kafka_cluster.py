"""`boardstream stack up --brokers 3` through the CLI: three KRaft nodes in one cluster, the
platform's topics and Kafka's internal topics replicated three times with two in sync (read back
with the AdminClient), status and down for all three; a busy port refused before anything starts."""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import ConfigResource, ResourceType

from boardstream.kafka.clients import admin_client, cluster_metadata
from boardstream.kafka.topics import platform_topics
from boardstream.settings import Settings
from tests.fixtures import cli, cluster_settings, world_readable_dir

INTERNAL = ("__consumer_offsets", "__transaction_state")
# While __consumer_offsets is still being created and its 50 partitions elected, a commit meets
# one of these; librdkafka does not retry a synchronous commit itself.
_COORDINATOR_MOVING = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
}


def _processes_under(directory: Path) -> list[int]:
    """Pids whose command line names ``directory`` (every node's names its own config file)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
        if proc.name.isdigit() and str(directory) in cmdline:
            pids.append(int(proc.name))
    return pids


@pytest.fixture
def cluster() -> Iterator[Settings]:
    settings = cluster_settings(world_readable_dir("boardstream-cluster-"))
    yield settings
    cli(settings, "stack", "down")
    shutil.rmtree(settings.var_dir, ignore_errors=True)


def _create_internal_topics(settings: Settings) -> None:
    """Kafka creates them on first use: a group's offset commit, a transactional producer."""
    consumer = Consumer({**settings.to_confluent(), "group.id": "replication-check"})
    offsets = [TopicPartition(settings.board_topic, 0, 0)]
    deadline = time.monotonic() + 60
    while True:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            break
        except KafkaException as error:
            if error.args[0].code() not in _COORDINATOR_MOVING or time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    consumer.close()
    Producer(
        {**settings.to_confluent(), "transactional.id": "replication-check"}
    ).init_transactions(60)


def test_three_brokers_replicate_every_topic_and_stop_together(cluster: Settings) -> None:
    up = cli(cluster, "stack", "up", "--brokers", "3", timeout=240)
    assert up.returncode == 0, up.stderr
    lines = up.stdout.splitlines()
    pids = [line.split("pid ")[1].split(")")[0] for line in lines[:3]]
    ports = [int(server.rpartition(":")[2]) for server in cluster.bootstrap_servers.split(",")]
    assert lines == [
        f"kafka started (pid {pids[0]}) on localhost:{ports[0]}",
        f"kafka-2 started (pid {pids[1]}) on localhost:{ports[1]}",
        f"kafka-3 started (pid {pids[2]}) on localhost:{ports[2]}",
        f"bootstrap servers: {cluster.bootstrap_servers}; other commands reach the cluster, "
        f"and create topics with 3 replicas, with BOARDSTREAM_BOOTSTRAP_SERVERS="
        f"{cluster.bootstrap_servers} BOARDSTREAM_BROKERS=3",
        f"the platform's database: {cluster.database} (BOARDSTREAM_DATABASE_URL unset)",
    ]

    admin = admin_client(cluster)
    brokers = cluster_metadata(admin, cluster).brokers
    assert {b.id: (b.host, b.port) for b in brokers.values()} == {
        n + 1: ("localhost", port) for n, port in enumerate(ports)
    }

    created = cli(cluster, "topics", "create")
    assert created.returncode == 0, created.stderr
    assert (
        "board: created (3 partitions, 3 replicas, delete, min.insync.replicas=2, "
        "retention.bytes=-1, retention.ms=604800000)"
    ) in created.stdout.splitlines()
    _create_internal_topics(cluster)
    topics = [spec.name for spec in platform_topics(cluster)] + list(INTERNAL)
    metadata = cluster_metadata(admin, cluster).topics
    replicas = {
        (topic, len(p.replicas), len(p.isrs))
        for topic in topics
        for p in metadata[topic].partitions.values()
    }
    assert replicas == {(topic, 3, 3) for topic in topics}
    configs = admin.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in topics])
    min_isr = {r.name: f.result()["min.insync.replicas"].value for r, f in configs.items()}
    assert min_isr == dict.fromkeys(topics, "2")

    status = cli(cluster, "stack", "status").stdout.splitlines()
    assert [line.split()[:4] for line in status[:3]] == [
        [name, "running", "(pid", f"{pid})"]
        for name, pid in zip(("kafka", "kafka-2", "kafka-3"), pids, strict=True)
    ]
    up_again = cli(cluster, "stack", "up", "--brokers", "3")
    assert up_again.stdout.splitlines()[:3] == [
        f"{name} already running (pid {pid}) on localhost:{port}"
        for name, pid, port in zip(("kafka", "kafka-2", "kafka-3"), pids, ports, strict=True)
    ]

    down = cli(cluster, "stack", "down")
    assert down.stdout.splitlines() == ["kafka-3 stopped", "kafka-2 stopped", "kafka stopped"]
    assert _processes_under(cluster.var_dir) == []


def test_a_busy_port_is_refused_before_anything_starts(cluster: Settings) -> None:
    port = int(cluster.bootstrap_servers.split(",")[1].rpartition(":")[2])  # kafka-2's
    with socket.socket() as busy:
        busy.bind(("localhost", port))
        busy.listen()
        up = cli(cluster, "stack", "up", "--brokers", "3")
    assert (up.returncode, up.stdout) == (1, "")
    assert up.stderr.startswith(
        f"boardstream: error: port {port} (kafka-2's client) is held by pid {os.getpid()} ("
    ), up.stderr
    assert up.stderr.endswith(
        "; stop it or set BOARDSTREAM_BOOTSTRAP_SERVERS (node n takes its port + 2(n-1))\n"
    ), up.stderr
    assert _processes_under(cluster.var_dir) == []
    assert not (cluster.var_dir / "kafka" / "data").exists(), "nothing formatted either"
