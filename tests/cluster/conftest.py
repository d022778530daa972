"""The cluster of hosts (:mod:`tests.cluster.cluster`), brought up once per module: its services
take minutes to start, and each scenario works on topics and checkpoints of its own."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests.cluster.cluster import Cluster
from tests.fixtures import world_readable_dir


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    root = world_readable_dir("bsh-cluster-")  # PostgreSQL's system user enters its host's dir
    running = Cluster(root)
    try:
        running.up()
        yield running
    finally:
        running.down()
        shutil.rmtree(root, ignore_errors=True)
