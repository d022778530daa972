"""On a cluster of three, kill -9 the broker that leads the most of the pipeline's partitions
while the join and the sink run: the partitions' other two replicas, in sync, take over, the
jobs' Kafka clients follow the new leaders, the second half of the backlog is written with
acks=all to two replicas (min.insync.replicas=2), and nothing is lost or duplicated."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from boardstream.generator.plan import Plan
from boardstream.kafka.clients import admin_client, cluster_metadata
from boardstream.settings import Settings
from tests.faults.harness import JOIN_ARGS, SINK_ARGS, Scenario, Supervisor, backlog_options

# Minutes on three brokers; CI keeps the cluster's start, layout and stop (integration).
pytestmark = pytest.mark.long

NAME = "kill -9 the partition leader (3 brokers)"
SEED = 20261125
FAILOVER_S = 60  # the controller fences a silent broker after 9 s (broker.session.timeout.ms)


def leaders(admin: AdminClient, settings: Settings, topics: list[str]) -> Counter[int]:
    """Partitions of ``topics`` each broker leads (-1: partitions without a leader)."""
    metadata = cluster_metadata(admin, settings).topics
    return Counter(p.leader for topic in topics for p in metadata[topic].partitions.values())


def test_kill_9_the_partition_leader_while_jobs_run(cluster_services, tmp_path: Path) -> None:
    cluster = cluster_services
    s = Scenario(NAME, cluster.settings, cluster.database_url, tmp_path, SEED)
    admin = admin_client(s.settings)
    topics = [s.settings.member_topic, s.settings.board_topic, s.settings.board_detail_topic]
    options = backlog_options(SEED)
    half = Plan(options).size // 2
    s.produce(options, slice(0, half))
    jobs = Supervisor(s, {"board-detail-join": JOIN_ARGS, "board-detail-sink": SINK_ARGS})
    jobs.await_batches()

    led = leaders(admin, s.settings, topics)
    victim = min(led, key=lambda broker: (-led[broker], broker))
    os.kill(cluster.brokers[victim - 1].process.pid(), signal.SIGKILL)
    s.faults += 1
    killed = time.monotonic()
    deadline = killed + FAILOVER_S
    while (now := leaders(admin, s.settings, topics))[victim] or now[-1]:
        assert time.monotonic() < deadline, f"partitions not failed over: {dict(now)}"
        time.sleep(0.5)
    failover_s = time.monotonic() - killed

    s.produce(options, slice(half, None))  # acks=all: answered once two replicas hold it
    jobs.run_until(lambda: len(s.table_counts()) == len(s.boards))
    recovered = time.monotonic() - killed
    jobs.stop()
    s.assert_nothing_lost(
        recovered,
        killed_broker=victim,
        partitions_led=led[victim],
        failover_s=round(failover_s, 1),
    )
