"""Where the local cluster's nodes listen: node 1 on the settings' ports, each further node two
ports on, and the storage tool's voter arguments for one node and for three; spread over hosts,
each node at its bootstrap server, every host formatting with the same voters, and settings that
cannot describe such a cluster refused, naming the setting."""

from __future__ import annotations

import pytest

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.stack.kafka_broker import KafkaBroker
from boardstream.stack.kafka_ids import directory_id
from boardstream.stack.kafka_layout import KafkaNode, hosts_layout, kafka_layout, local_layout


def test_three_nodes_take_the_next_ports_in_pairs() -> None:
    layout = kafka_layout(Settings(bootstrap_servers="localhost:9092", controller_port=9093), 3)
    assert layout.nodes == (
        KafkaNode(1, 9092, 9093),
        KafkaNode(2, 9094, 9095),
        KafkaNode(3, 9096, 9097),
    )
    assert [node.name for node in layout.nodes] == ["kafka", "kafka-2", "kafka-3"]
    assert layout.bootstrap_servers == "localhost:9092,localhost:9094,localhost:9096"
    assert layout.controllers == "localhost:9093,localhost:9095,localhost:9097"
    layout.check_ports()


def test_one_node_is_the_single_broker_on_the_settings_ports() -> None:
    layout = kafka_layout(Settings(bootstrap_servers="localhost:19092", controller_port=19193), 1)
    assert layout.nodes == (KafkaNode(1, 19092, 19193),)
    assert layout.bootstrap_servers == "localhost:19092"
    assert layout.quorum_arguments({}) == ["--standalone"]


def test_a_cluster_is_formatted_with_every_voter_and_its_directory() -> None:
    layout = kafka_layout(Settings(bootstrap_servers="localhost:9092", controller_port=9093), 3)
    assert layout.quorum_arguments({1: "dirA", 2: "dirB", 3: "dirC"}) == [
        "--initial-controllers",
        "1@localhost:9093:dirA,2@localhost:9095:dirB,3@localhost:9097:dirC",
    ]


def test_ports_the_nodes_would_share_are_refused_by_number() -> None:
    layout = kafka_layout(Settings(bootstrap_servers="localhost:9092", controller_port=9094), 3)
    with pytest.raises(BoardstreamError) as refused:
        layout.check_ports()
    assert str(refused.value).startswith(
        "the 3 local brokers would share port(s) 9094, 9096: node n listens on the client and "
        "controller ports + 2(n-1)"
    )
    kafka_layout(
        Settings(bootstrap_servers="localhost:9092", controller_port=9094), 1
    ).check_ports()


@pytest.mark.parametrize("size", [0, 2, 5])
def test_only_one_or_three_brokers(size: int) -> None:
    with pytest.raises(BoardstreamError, match=f"1 or 3 brokers, not {size}"):
        kafka_layout(Settings(), size)


def test_nodes_listen_on_and_advertise_the_settings_kafka_host() -> None:
    """A broker on a test host (stack/hosts.py) binds that host's address, which the other hosts
    reach, not a loopback of its own."""
    settings = Settings(
        bootstrap_servers="10.231.0.2:9092", controller_port=9093, kafka_host="10.231.0.2"
    )
    layout = kafka_layout(settings, 1)
    assert (layout.bootstrap_servers, layout.controllers) == ("10.231.0.2:9092", "10.231.0.2:9093")
    properties = KafkaBroker(settings, layout.nodes[0], layout).server_properties().splitlines()
    assert "listeners=PLAINTEXT://10.231.0.2:9092,CONTROLLER://10.231.0.2:9093" in properties
    assert "advertised.listeners=PLAINTEXT://10.231.0.2:9092" in properties
    assert "controller.quorum.bootstrap.servers=10.231.0.2:9093" in properties


CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
SPREAD = "10.232.1.2:9092,10.232.1.3:9092,10.232.1.4:9092"


def spread(node: int | None = 2, **overrides: object) -> Settings:
    """Settings of the host running ``node`` of a cluster spread over three hosts."""
    values: dict[str, object] = {
        "bootstrap_servers": SPREAD,
        "controller_port": 9093,
        "kafka_node": node,
        "kafka_cluster_id": CLUSTER_ID,
        **overrides,
    }
    return Settings(**values)


def test_spread_over_hosts_the_nodes_are_the_bootstrap_servers_without_a_stride() -> None:
    layout = hosts_layout(spread(2))
    assert layout.nodes == (
        KafkaNode(1, 9092, 9093, "10.232.1.2"),
        KafkaNode(2, 9092, 9093, "10.232.1.3"),
        KafkaNode(3, 9092, 9093, "10.232.1.4"),
    )
    assert (layout.own, layout.own_node, layout.spread) == (2, layout.nodes[1], True)
    assert layout.bootstrap_servers == SPREAD
    assert layout.controllers == "10.232.1.2:9093,10.232.1.3:9093,10.232.1.4:9093"
    assert local_layout(spread(2)) == layout
    assert local_layout(Settings()) == kafka_layout(Settings(), 1)
    assert not kafka_layout(Settings(), 3).spread


def test_every_host_formats_its_node_with_the_same_voters() -> None:
    """The voters each host's storage tool is given do not depend on which node it runs."""
    arguments = [
        hosts_layout(spread(n)).quorum_arguments(hosts_layout(spread(n)).directory_ids())
        for n in (1, 2, 3)
    ]
    ids = [directory_id(CLUSTER_ID, n) for n in (1, 2, 3)]
    assert (
        arguments
        == [
            [
                "--initial-controllers",
                f"1@10.232.1.2:9093:{ids[0]},2@10.232.1.3:9093:{ids[1]},3@10.232.1.4:9093:{ids[2]}",
            ]
        ]
        * 3
    )
    other = hosts_layout(spread(1, kafka_cluster_id="AAAAAAAAAAAAAAAAAAAAAQ")).directory_ids()
    assert not set(other.values()) & set(ids)
    with pytest.raises(BoardstreamError, match="only a cluster spread over hosts"):
        kafka_layout(Settings(), 3).directory_ids()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"kafka_node": 4},
            f"BOARDSTREAM_KAFKA_NODE=4: the cluster's nodes are 1 to 3, at "
            f"BOARDSTREAM_BOOTSTRAP_SERVERS={SPREAD} in that order",
        ),
        (
            {"kafka_node": 0},
            f"BOARDSTREAM_KAFKA_NODE=0: the cluster's nodes are 1 to 3, at "
            f"BOARDSTREAM_BOOTSTRAP_SERVERS={SPREAD} in that order",
        ),
        (
            {"bootstrap_servers": "10.232.1.2:9092,10.232.1.3:9092"},
            "BOARDSTREAM_KAFKA_NODE=2: a cluster spread over hosts has 3 nodes, node n at the "
            "n-th bootstrap server, but BOARDSTREAM_BOOTSTRAP_SERVERS=10.232.1.2:9092,"
            "10.232.1.3:9092 lists 2",
        ),
        (
            {"kafka_host": "10.232.1.2"},
            "BOARDSTREAM_KAFKA_HOST=10.232.1.2 is not the host of node 2, 10.232.1.3:9092 "
            f"(entry 2 of BOARDSTREAM_BOOTSTRAP_SERVERS={SPREAD}): leave it unset or make it "
            "10.232.1.3",
        ),
        (
            {"bootstrap_servers": "10.232.1.2:9092,10.232.1.3:9092,10.232.1.2:9092"},
            "the cluster's nodes would share 10.232.1.2:9092, 10.232.1.2:9093: each listens at "
            "its entry of BOARDSTREAM_BOOTSTRAP_SERVERS and, on that host, at "
            "BOARDSTREAM_CONTROLLER_PORT; list a host once, at another port",
        ),
        (
            {"controller_port": 9092},
            "the cluster's nodes would share 10.232.1.2:9092, 10.232.1.3:9092, 10.232.1.4:9092: ",
        ),
    ],
)
def test_a_spread_layout_the_settings_cannot_describe_is_refused_naming_them(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(BoardstreamError) as refused:
        hosts_layout(spread(**overrides))  # type: ignore[arg-type]
    assert str(refused.value).startswith(message)


def test_a_spread_node_needs_the_cluster_id_and_is_offered_a_fresh_one() -> None:
    with pytest.raises(BoardstreamError) as refused:
        hosts_layout(spread(3, kafka_cluster_id=None))
    prefix = (
        "BOARDSTREAM_KAFKA_NODE=3 needs BOARDSTREAM_KAFKA_CLUSTER_ID: one cluster id, the same "
        "on every host of the cluster (such as "
    )
    assert str(refused.value).startswith(prefix)
    offered = str(refused.value).removeprefix(prefix).removesuffix(", made now)")
    assert Settings(kafka_cluster_id=offered).kafka_cluster_id == offered


def test_the_node_is_bound_and_advertised_at_its_own_bootstrap_server(tmp_path) -> None:
    settings = spread(3, var_dir=tmp_path, bootstrap_servers=SPREAD.replace("4:9092", "4:19092"))
    broker = KafkaBroker(settings)
    properties = broker.server_properties().splitlines()
    assert "node.id=3" in properties
    assert "listeners=PLAINTEXT://10.232.1.4:19092,CONTROLLER://10.232.1.4:9093" in properties
    assert "advertised.listeners=PLAINTEXT://10.232.1.4:19092" in properties
    assert (
        "controller.quorum.bootstrap.servers=10.232.1.2:9093,10.232.1.3:9093,10.232.1.4:9093"
        in properties
    )
