"""Where each node of the local Kafka cluster listens, and who votes in its controller quorum.

Node 1 is the single broker of the default stack, on the settings' ports. With ``--brokers 3``,
nodes 2 and 3 take the next ports: node n serves clients on ``kafka_port + 2(n-1)`` and its
controller on ``controller_port + 2(n-1)`` (9092/9093, 9094/9095, 9096/9097 by default). Every
node is broker and controller (KRaft combined mode), so the three voters keep a quorum when any
one node fails, whether it led partitions, the quorum, or both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from boardstream.errors import BoardstreamError
from boardstream.settings import CLUSTER_SIZES, Settings

PORT_STRIDE = 2  # a client and a controller port per node


@dataclass(frozen=True)
class KafkaNode:
    node_id: int
    port: int
    controller_port: int
    host: str = "localhost"  # the address it binds and advertises (settings' kafka_host)

    @property
    def address(self) -> str:
        """Where clients, and the other brokers, reach this node."""
        return f"{self.host}:{self.port}"

    @property
    def name(self) -> str:
        """Node 1 keeps the single broker's name (its home, log and pid file are ``kafka``)."""
        return "kafka" if self.node_id == 1 else f"kafka-{self.node_id}"

    @property
    def controller(self) -> str:
        """Where the quorum's voters reach this node's controller."""
        return f"{self.host}:{self.controller_port}"


@dataclass(frozen=True)
class KafkaLayout:
    nodes: tuple[KafkaNode, ...]

    @property
    def size(self) -> int:
        return len(self.nodes)

    @property
    def bootstrap_servers(self) -> str:
        """Every node: a client that starts while one is down still finds the cluster."""
        return ",".join(node.address for node in self.nodes)

    @property
    def controllers(self) -> str:
        """``controller.quorum.bootstrap.servers``: where a node finds the quorum."""
        return ",".join(node.controller for node in self.nodes)

    def quorum_arguments(self, directory_ids: Mapping[int, str]) -> list[str]:
        """How the storage tool formats a node: a single node is a quorum of itself; a cluster's
        nodes are all formatted with the same voters, each named with its metadata directory."""
        if self.size == 1:
            return ["--standalone"]
        voters = ",".join(
            f"{node.node_id}@{node.controller}:{directory_ids[node.node_id]}" for node in self.nodes
        )
        return ["--initial-controllers", voters]

    def check_ports(self) -> None:
        """Refuse a layout whose nodes would share a port (the settings' client and controller
        ports closer than the nodes' stride)."""
        ports = [port for node in self.nodes for port in (node.port, node.controller_port)]
        shared = sorted({port for port in ports if ports.count(port) > 1})
        if shared:
            raise BoardstreamError(
                f"the {self.size} local brokers would share port(s) "
                f"{', '.join(map(str, shared))}: node n listens on the client and controller "
                f"ports + {PORT_STRIDE}(n-1); choose BOARDSTREAM_BOOTSTRAP_SERVERS and "
                "BOARDSTREAM_CONTROLLER_PORT further apart"
            )


def kafka_layout(settings: Settings, size: int) -> KafkaLayout:
    if size not in CLUSTER_SIZES:
        raise BoardstreamError(f"the local stack runs 1 or 3 brokers, not {size}")
    return KafkaLayout(
        tuple(
            KafkaNode(
                n,
                settings.kafka_port + PORT_STRIDE * (n - 1),
                settings.controller_port + PORT_STRIDE * (n - 1),
                settings.kafka_host,
            )
            for n in range(1, size + 1)
        )
    )
