"""Faults on a cluster of hosts (issue #50), each ending with ``reconcile --full`` PASSED, nothing
lost and no duplicate row, its figures in ``test-artifacts/reliability.jsonl``.

The live join and sink are started by the supervision on a driver host, their executors on the
two worker hosts, their checkpoints on HDFS, their leases, register and progress in the cluster's
PostgreSQL, their records on three Kafka nodes. The verdict is taken from the tests' own
namespace, as an operator's machine would take it.
"""

from __future__ import annotations

import time

from boardstream.generator.plan import Plan
from boardstream.spark.checkpoint_lease import holder
from boardstream.supervision.streams import StreamOptions, board_detail_streams
from tests.faults.cluster.cluster import Cluster
from tests.faults.cluster.scenarios import SEED, loaded, scenario, supervise, until
from tests.faults.harness import backlog_options


def test_a_worker_hosts_death_moves_the_executors_to_the_other(cluster: Cluster, tmp_path) -> None:
    """(a) kill -9 every process of a worker host under the live streams: their executors there
    die with it, the master gives the streams executors on the other worker, and every board is
    loaded once."""
    s = scenario(cluster, "cluster: a worker host killed", tmp_path)
    half = len(list(Plan(backlog_options(SEED)))) // 2
    s.produce(part=slice(0, half))
    assert supervise(cluster, "driver-1", s, "start") == {
        "board-detail-join": "bsh-driver-1",
        "board-detail-sink": "bsh-driver-1",
    }
    settings = s.settings
    join, _ = board_detail_streams(settings, StreamOptions())
    until(lambda: s.batches("board-detail-sink") > 0, "a sink batch")
    executors = cluster.executor_hosts()
    assert executors == {"worker-1", "worker-2"}, executors

    killed = cluster.hosts.kill("worker-1")
    began = time.monotonic()
    assert killed, "worker-1 ran nothing"
    s.faults += 1
    s.produce(part=slice(half, None))
    recover_s = until(loaded(s), "every board loaded after worker-1's death")
    assert cluster.executor_hosts() == {"worker-2"}
    first = holder(settings, join.checkpoint)
    assert first is not None and first.host == "bsh-driver-1"  # the drivers lived on

    # Stopped from the other driver host: asked through the leases, no pid crosses hosts.
    supervise(cluster, "driver-2", s, "stop")
    assert holder(settings, join.checkpoint) is None
    s.assert_nothing_lost(time.monotonic() - began, recovered_after_s=round(recover_s, 1))
