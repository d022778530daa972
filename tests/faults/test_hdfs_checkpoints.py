"""The pipeline with its checkpoints on HDFS (a real NameNode and DataNode, as `stack up --hdfs`
runs them): the join killed -9 mid-backlog resumes from its checkpoint there, a NameNode
restarted while the join runs is ridden out, reconciliation reads the offset logs there and
passes, and no checkpoint file lands on the local disk."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardstream.locations import shown
from boardstream.settings import Settings
from boardstream.stack.hdfs import DataNode, NameNode
from tests.faults.conftest import Services
from tests.faults.harness import JOIN_ARGS, SINK_ARGS, Scenario

SEED = 20261130


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

    # The NameNode restarted under the running join: its HDFS client retries, and it goes on.
    before = s.batches("board-detail-join")
    join = s.continuous("board-detail-join", JOIN_ARGS)
    s.await_batch("board-detail-join", join, before)
    NameNode(hdfs).process.stop()
    restarted = time.monotonic()
    NameNode(hdfs).start()
    after_restart = s.batches("board-detail-join")
    s.await_batch("board-detail-join", join, after_restart)
    join.send_signal(signal.SIGTERM)
    assert join.wait(timeout=300) == 0, s.tail("board-detail-join")
    s.faults, s.restarts = 2, 2

    s.run_to_end("board-detail-join", JOIN_ARGS)
    s.run_to_end("board-detail-sink", SINK_ARGS)
    s.assert_nothing_lost(time.monotonic() - restarted)

    state = s.cli("state", "show", "--checkpoint", s.settings.checkpoint("board-detail-join"))
    assert state.returncode == 0, state.stdout[-3000:] + state.stderr[-3000:]
    assert "operator 0 " in state.stdout
    assert not Path(shown(Settings(var_dir=s.settings.var_dir).checkpoints)).exists()
