"""The cluster of hosts (:mod:`.cluster`), brought up once per module: its services take minutes
to start, and each scenario works on topics and checkpoints of its own."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from boardstream.stack.hosts import DEFAULT_NETWORK, Network
from tests.faults.cluster.cluster import Cluster
from tests.fixtures import world_readable_dir


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from _running(airflow=False)


@pytest.fixture(scope="module")
def airflow_cluster() -> Iterator[Cluster]:
    """The cluster with Airflow on a host of its own and an edge worker on each driver host, on
    a network of its own: it may run beside the other (a long run beside the suite)."""
    yield from _running(airflow=True, network=Network("bsa", "10.232.6.0/24"))


def _running(airflow: bool, network: Network = DEFAULT_NETWORK) -> Iterator[Cluster]:
    root = world_readable_dir("bsh-cluster-")  # PostgreSQL's system user enters its host's dir
    running = Cluster(root, airflow=airflow, network=network)
    try:
        running.up()
        yield running
    finally:
        running.down()
        shutil.rmtree(root, ignore_errors=True)
