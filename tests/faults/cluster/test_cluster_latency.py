"""The live stream's latency on the cluster of hosts under Airflow (issue #50), measured as the
README's run measures a single host's, with the lease TTL an operator runs (the settings'
default): the fault scenarios' 10 s TTL trades spurious restarts under load for a fast
failover, which a latency run must not pay. Beside the single host's, in one sitting (about
30 minutes)::

    pytest --long tests/dags/test_readme_live_stream.py \\
        tests/faults/cluster/test_cluster_latency.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from boardstream.settings import PROJECT_ROOT, Settings
from boardstream.supervision import register
from tests.airflow_fixtures import ARTIFACTS
from tests.faults.cluster.cluster import AIRFLOW_NETWORK, Cluster, running
from tests.faults.cluster.scenarios import JOBS, streams_running
from tests.faults.harness import Scenario
from tests.fixtures import LATENCY_ROW

pytestmark = pytest.mark.long


@pytest.fixture(scope="module")
def airflow_cluster() -> Iterator[Cluster]:
    """The Airflow cluster (the other modules' network) with the default lease TTL."""
    default_ttl = Settings.model_fields["lease_ttl_s"].default
    with running(airflow=True, network=AIRFLOW_NETWORK, lease_ttl_s=default_ttl) as up:
        yield up


@pytest.mark.timeout(1_800)
def test_the_live_stream_latency_at_1000_boards_per_second(
    airflow_cluster: Cluster, pipeline: Scenario, tmp_path
) -> None:
    """Boards at 1,000/s for 5 minutes into the streams the DAG runs on the cluster, measured by
    ``bench/stream_latency.py --attach`` from the tests' machine: every board loaded, and no
    restart on the way. The figures go to ``test-artifacts/cluster-live-stream.txt``
    (docs/BENCHMARKS.md compares them with the README run's)."""
    streams_running(pipeline)
    restarts = {job: register.read(pipeline.settings, job).restarts for job in JOBS}
    env = {**os.environ, **airflow_cluster.env(), "BOARDSTREAM_VAR_DIR": str(tmp_path)}
    bench = subprocess.run(
        [sys.executable, "bench/stream_latency.py", "--attach", "--rate", "1000"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "cluster-live-stream.txt").write_text(bench.stdout + bench.stderr[-3000:])
    [row] = LATENCY_ROW.finditer(bench.stdout)
    assert (row["sent"], row["missing"]) == ("300,000", "0"), row[0]
    assert bench.returncode == 0, bench.stderr[-3000:]
    after = {job: register.read(pipeline.settings, job).restarts for job in JOBS}
    assert after == restarts, "a stream restarted under the load"
