"""On a cluster of three, kill -9 the broker that leads the most of the pipeline's partitions
while the join and the sink run: the partitions' other two replicas, in sync, take over, the
jobs' Kafka clients follow the new leaders, the second half of the backlog is written with
acks=all to two replicas (min.insync.replicas=2), and nothing is lost or duplicated."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from boardstream.generator.plan import Plan
from boardstream.kafka.clients import admin_client, cluster_metadata
from boardstream.settings import Settings
from boardstream.stack.spark_cluster import SparkMaster, SparkWorker
from tests.faults.harness import (
    JOIN_ARGS,
    SINK_ARGS,
    LiveStream,
    Scenario,
    Supervisor,
    backlog_options,
)

# Minutes on three brokers; CI keeps the cluster's start, layout and stop (integration).
pytestmark = pytest.mark.long

NAME = "kill -9 the partition leader (3 brokers)"
SEED = 20261125
FAILOVER_S = 60  # the controller fences a silent broker after 9 s (broker.session.timeout.ms)


def leaders(admin: AdminClient, settings: Settings, topics: list[str]) -> Counter[int]:
    """Partitions of ``topics`` each broker leads (-1: partitions without a leader)."""
    metadata = cluster_metadata(admin, settings).topics
    return Counter(p.leader for topic in topics for p in metadata[topic].partitions.values())


@pytest.fixture
def spark_cluster(cluster_services) -> Iterator[str]:
    """A Spark master and worker beside the brokers, with room for both streams; its master."""
    settings = cluster_services.settings.model_copy(
        update={"spark_worker_cores": 4, "spark_worker_memory": "3g"}
    )
    master, worker = SparkMaster(settings), SparkWorker(settings)
    master.start()
    worker.start()
    yield master.address
    worker.process.stop()
    master.process.stop()


@pytest.mark.parametrize("runner", ["jobs", "live stream"])
def test_kill_9_the_partition_leader_while_jobs_run(
    cluster_services, tmp_path: Path, request: pytest.FixtureRequest, runner: str
) -> None:
    """``jobs``: the join and the sink run continuously in local mode, restarted when they
    exit; ``live stream``: as board_detail_stream runs them, supervised, on a Spark cluster."""
    cluster = cluster_services
    name = NAME if runner == "jobs" else f"{NAME}, live stream on a Spark cluster"
    s = Scenario(name, cluster.settings, cluster.database_url, tmp_path, SEED)
    admin = admin_client(s.settings)
    topics = [s.settings.member_topic, s.settings.board_topic, s.settings.board_detail_topic]
    options = backlog_options(SEED)
    half = Plan(options).size // 2
    s.produce(options, slice(0, half))
    if runner == "jobs":
        jobs = Supervisor(s, {"board-detail-join": JOIN_ARGS, "board-detail-sink": SINK_ARGS})
    else:
        jobs = LiveStream(s, request.getfixturevalue("spark_cluster"))
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
