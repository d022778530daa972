"""When ``stack up --brokers 3`` formats the nodes' storage: all of them when none is, none when
all hold one cluster, and never a mix (a single broker's storage beside new nodes)."""

from __future__ import annotations

import pytest

from boardstream.errors import BoardstreamError
from boardstream.stack.kafka_cluster import KafkaCluster, storage_state
from tests.fixtures import isolated_settings


@pytest.mark.parametrize(
    ("ids", "state"),
    [
        ([None, None, None], "new"),
        (["c1", "c1", "c1"], "formatted"),
        (["c1", None, None], "foreign"),  # a single broker's storage
        (["c1", "c1", None], "foreign"),
        (["c1", "c2", "c1"], "foreign"),
        ([None], "new"),
        (["c1"], "formatted"),
    ],
)
def test_storage_state(ids: list[str | None], state: str) -> None:
    assert storage_state(ids) == state


def test_a_single_brokers_storage_is_not_taken_for_a_cluster(tmp_path) -> None:
    settings = isolated_settings(
        tmp_path, bootstrap_servers="localhost:19092", controller_port=19093
    )
    (tmp_path / "kafka" / "data").mkdir(parents=True)
    (tmp_path / "kafka" / "data" / "meta.properties").write_text("node.id=1\ncluster.id=abc\n")
    with pytest.raises(BoardstreamError) as refused:
        KafkaCluster(settings, 3).up()
    assert str(refused.value) == (
        "the nodes' storage is not one 3-broker cluster (kafka: abc, kafka-2: not formatted, "
        f"kafka-3: not formatted); stop the stack and remove {tmp_path}/kafka* to start a fresh one"
    )
    assert not (tmp_path / "kafka-2").exists()
