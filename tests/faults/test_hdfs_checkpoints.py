"""The pipeline with its checkpoints on HDFS (a real NameNode and DataNode, as `stack up --hdfs`
runs them): the join killed -9 mid-backlog resumes from its checkpoint there, a NameNode
restarted under the running join and sink is ridden out (a job whose batch it broke restarts
from its checkpoint), reconciliation reads the offset logs there and passes, and no
checkpoint file lands on the local disk."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardstream.locations import shown
from boardstream.settings import Settings
from boardstream.stack.hdfs import DataNode, NameNode
from tests.faults.conftest import Services
from tests.faults.harness import JOIN_ARGS, SINK_ARGS, Scenario, Supervisor

SEED = 20261130
# Two minutes: CI keeps the checkpoints on HDFS in tests/integration/test_hdfs.py (a stateful
# query resumed from them, the event log) and the NameNode-down refusal in test_preflight.py.
pytestmark = pytest.mark.long


@pytest.fixture
def hdfs(services: Services) -> Iterator[Settings]:
    """The scenario's HDFS, on the services' ports; its daemons stopped after."""
    namenode, datanode = NameNode(services.settings), DataNode(services.settings)
    namenode.start()
    datanode.start()
    yield services.settings
    datanode.process.stop()
    NameNode(services.settings).process.stop()


def test_checkpoints_on_hdfs_survive_a_kill_and_a_namenode_restart(
    services: Services, hdfs: Settings, tmp_path: Path
) -> None:
    root = f"{hdfs.hdfs_uri}/boardstream/checkpoints"
    s = Scenario(
        "checkpoints on HDFS: kill -9, NameNode restart",
        services.settings,
        services.database_url,
        tmp_path,
        SEED,
        overrides={"checkpoint_root": root, "hdfs_replication": 1},
    )
    assert s.settings.checkpoint("board-detail-join") == f"{root}/board-detail-join"
    s.produce()
    s.kill_mid_run("board-detail-join", JOIN_ARGS)
    s.restarts = s.faults

    # The NameNode restarted under the running jobs: a batch whose files were being written
    # then may fail (its one DataNode's pipeline broken), and its job, restarted as a
    # scheduler's retry would, resumes from its checkpoint on HDFS.
    jobs = Supervisor(s, {"board-detail-join": JOIN_ARGS, "board-detail-sink": SINK_ARGS})
    jobs.await_batches()
    NameNode(hdfs).process.stop()
    s.faults += 1
    NameNode(hdfs).start()
    back = time.monotonic()
    jobs.run_until(lambda: len(s.table_counts()) == len(s.boards))
    recovered = time.monotonic() - back
    jobs.stop()
    s.assert_nothing_lost(recovered, job_exits=len(jobs.exits))

    state = s.cli("state", "show", "--checkpoint", s.settings.checkpoint("board-detail-join"))
    assert state.returncode == 0, state.stdout[-3000:] + state.stderr[-3000:]
    assert "operator 0 " in state.stdout
    assert not Path(shown(Settings(var_dir=s.settings.var_dir).checkpoints)).exists()
