"""Per-scenario services: a broker (or a cluster of three) and a PostgreSQL of the scenario's own,
which it may stop, kill and start again without disturbing any other test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from boardstream.settings import Settings
from boardstream.stack.kafka_broker import KafkaBroker
from boardstream.stack.kafka_cluster import KafkaCluster
from boardstream.stack.postgres import Postgres
from tests.fixtures import cluster_settings, isolated_settings, world_readable_dir


@dataclass
class Services:
    settings: Settings
    broker: KafkaBroker
    postgres: Postgres

    @property
    def database_url(self) -> str:
        return self.postgres.url

    def restart_broker(self) -> None:
        """A new broker process on the same data directory: the topics and offsets survive."""
        self.broker = KafkaBroker(self.settings)
        self.broker.start()

    def restart_postgres(self) -> None:
        self.postgres = Postgres(self.settings)
        self.postgres.start()


@pytest.fixture
def services() -> Iterator[Services]:
    var_dir = world_readable_dir("boardstream-faults-")
    settings = isolated_settings(var_dir)
    broker, postgres = KafkaBroker(settings), Postgres(settings)
    broker.start()
    postgres.start()
    running = Services(settings, broker, postgres)
    yield running
    running.broker.process.stop()
    running.postgres.process.stop()
    shutil.rmtree(var_dir, ignore_errors=True)


@dataclass
class ClusterServices:
    """``stack up --brokers 3``: its topics get 3 replicas, 2 of them in sync for a write."""

    settings: Settings
    brokers: list[KafkaBroker]
    postgres: Postgres

    @property
    def database_url(self) -> str:
        return self.postgres.url


@pytest.fixture
def cluster_services() -> Iterator[ClusterServices]:
    var_dir = world_readable_dir("boardstream-faults-")
    settings = cluster_settings(var_dir)
    cluster, postgres = KafkaCluster(settings, 3), Postgres(settings)
    cluster.up()
    postgres.start()
    yield ClusterServices(settings, cluster.brokers, postgres)
    for broker in cluster.brokers:  # together, as `stack down` stops them
        broker.process.signal()
    for service in (*cluster.brokers, postgres):
        service.process.stop()
    shutil.rmtree(var_dir, ignore_errors=True)
