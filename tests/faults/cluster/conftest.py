"""The cluster of hosts (:mod:`.cluster`), brought up once per module: its services take minutes
to start, and each scenario works on topics and checkpoints of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from boardstream.settings import Settings
from tests.faults.cluster.cluster import AIRFLOW_NETWORK, Cluster, running
from tests.faults.cluster.scenarios import SEED
from tests.faults.harness import Scenario

STREAM, REQUEST = "board_detail_stream", "board_detail_stream_request"
TOPICS = ("member_topic", "board_topic", "board_detail_topic", "unmatched_topic", "dlq_topic")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with running(airflow=False) as up:
        yield up


@pytest.fixture(scope="module")
def airflow_cluster() -> Iterator[Cluster]:
    """The cluster with Airflow on a host of its own and an edge worker on each driver host, on
    a network of its own: it may run beside the other (a long run beside the suite)."""
    with running(airflow=True, network=AIRFLOW_NETWORK) as up:
        yield up


@pytest.fixture(scope="module")
def pipeline(airflow_cluster: Cluster, tmp_path_factory) -> Iterator[Scenario]:
    """The cluster's pipeline, its streams kept running by the continuous board_detail_stream
    DAG from the moment it is unpaused (a stream is wanted running until stopped on request)."""
    defaults = {name: Settings.model_fields[name].default for name in TOPICS}
    s = Scenario(
        "cluster under Airflow",
        airflow_cluster.settings(),
        airflow_cluster.settings().database,
        tmp_path_factory.mktemp("cluster-pipeline"),
        SEED,
        overrides=defaults,
    )
    api = airflow_cluster.airflow_api()
    for dag in (STREAM, REQUEST):
        api.wait_for_dag(dag)
        api.unpause(dag)
    yield s
    run = api.trigger(REQUEST, {"action": "stop"})
    assert api.wait(REQUEST, run, timeout_s=600) == "success"
