"""Where each node of the local Kafka cluster listens, and who votes in its controller quorum.

Node 1 is the single broker of the default stack, on the settings' ports. With ``--brokers 3``,
nodes 2 and 3 take the next ports: node n serves clients on ``kafka_port + 2(n-1)`` and its
controller on ``controller_port + 2(n-1)`` (9092/9093, 9094/9095, 9096/9097 by default). Every
node is broker and controller (KRaft combined mode), so the three voters keep a quorum when any
one node fails, whether it led partitions, the quorum, or both.

A cluster spread over hosts (``BOARDSTREAM_KAFKA_NODE=n`` on each, see ``hosts_layout``) has its
three nodes at the three bootstrap servers, in order, each controller on its node's host at the
settings' controller port: no stride, each host has its ports to itself. A host runs its own node
only and formats it alone, with the cluster id they share and the voters' directory ids every
host derives from it (``kafka_ids.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from boardstream.errors import BoardstreamError
from boardstream.settings import CLUSTER_SIZES, Settings
from boardstream.stack.kafka_ids import directory_id, new_cluster_id

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
    # Spread over hosts: the node this host runs, and the cluster id every host formats with.
    own: int | None = None
    cluster_id: str | None = None

    @property
    def size(self) -> int:
        return len(self.nodes)

    @property
    def spread(self) -> bool:
        """Whether the nodes run on hosts of their own, this host running ``own`` only."""
        return self.own is not None

    @property
    def own_node(self) -> KafkaNode:
        """The node this host runs alone: its own node when spread, else node 1 (the single
        broker)."""
        return self.nodes[(self.own or 1) - 1]

    def directory_ids(self) -> dict[int, str]:
        """Spread over hosts: each voter's metadata directory id, derived as every host does."""
        if self.cluster_id is None:
            raise BoardstreamError("only a cluster spread over hosts derives its directory ids")
        return {node.node_id: directory_id(self.cluster_id, node.node_id) for node in self.nodes}

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
        """Refuse a layout whose nodes would share a port on a host (on one host: the settings'
        client and controller ports closer than the nodes' stride)."""
        ends = [(n.host, port) for n in self.nodes for port in (n.port, n.controller_port)]
        shared = sorted({end for end in ends if ends.count(end) > 1})
        if shared and self.spread:
            raise BoardstreamError(
                f"the cluster's nodes would share {', '.join(f'{h}:{p}' for h, p in shared)}: "
                "each listens at its entry of BOARDSTREAM_BOOTSTRAP_SERVERS and, on that host, "
                "at BOARDSTREAM_CONTROLLER_PORT; list a host once, at another port"
            )
        if shared:
            raise BoardstreamError(
                f"the {self.size} local brokers would share port(s) "
                f"{', '.join(str(port) for _, port in shared)}: node n listens on the client "
                f"and controller ports + {PORT_STRIDE}(n-1); choose "
                "BOARDSTREAM_BOOTSTRAP_SERVERS and BOARDSTREAM_CONTROLLER_PORT further apart"
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


def local_layout(settings: Settings) -> KafkaLayout:
    """The layout of the broker this host's ``stack up`` starts alone: the single broker, or,
    with ``kafka_node`` set, this host's node of a cluster spread over hosts."""
    return kafka_layout(settings, 1) if settings.kafka_node is None else hosts_layout(settings)


def hosts_layout(settings: Settings) -> KafkaLayout:
    """The cluster spread over hosts, as the host running node ``settings.kafka_node`` sees it:
    node n at the n-th bootstrap server, its controller on that host at the controller port.
    Refused, naming the setting at fault, before anything starts: bootstrap servers that are
    not three nodes, a node number not among them, no cluster id, a ``kafka_host`` that is not
    the node's host, or nodes that would share a port."""
    node, size = settings.kafka_node, max(CLUSTER_SIZES)
    servers = [server.strip() for server in settings.bootstrap_servers.split(",")]
    where = f"BOARDSTREAM_BOOTSTRAP_SERVERS={settings.bootstrap_servers}"
    if len(servers) != size:
        raise BoardstreamError(
            f"BOARDSTREAM_KAFKA_NODE={node}: a cluster spread over hosts has {size} nodes, node n "
            f"at the n-th bootstrap server, but {where} lists {len(servers)}"
        )
    if node is None or not 1 <= node <= size:
        raise BoardstreamError(
            f"BOARDSTREAM_KAFKA_NODE={node}: the cluster's nodes are 1 to {size}, at {where} in "
            "that order"
        )
    if settings.kafka_cluster_id is None:
        raise BoardstreamError(
            f"BOARDSTREAM_KAFKA_NODE={node} needs BOARDSTREAM_KAFKA_CLUSTER_ID: one cluster id, "
            f"the same on every host of the cluster (such as {new_cluster_id()}, made now)"
        )
    nodes = []
    for n, server in enumerate(servers, 1):
        host, _, port = server.rpartition(":")
        nodes.append(KafkaNode(n, int(port), settings.controller_port, host))
    layout = KafkaLayout(tuple(nodes), own=node, cluster_id=settings.kafka_cluster_id)
    own = layout.own_node
    if settings.kafka_host not in (Settings.model_fields["kafka_host"].default, own.host):
        raise BoardstreamError(
            f"BOARDSTREAM_KAFKA_HOST={settings.kafka_host} is not the host of node {node}, "
            f"{own.address} (entry {node} of {where}): leave it unset or make it {own.host}"
        )
    layout.check_ports()
    return layout
