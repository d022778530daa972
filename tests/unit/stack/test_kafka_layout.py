"""Where the local cluster's nodes listen: node 1 on the settings' ports, each further node two
ports on, and the storage tool's voter arguments for one node and for three."""

from __future__ import annotations

import pytest

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.stack.kafka_broker import KafkaBroker
from boardstream.stack.kafka_layout import KafkaNode, kafka_layout


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
