"""``stack up --brokers 3``: three KRaft nodes started, and formatted, as one cluster.

A quorum of three controllers cannot elect a leader before two of them run, so no node is ready
alone: all are started, then awaited together until the metadata lists every broker. Their
storage is formatted together, once, with one cluster id and the same initial voters
(``kafka-storage format --initial-controllers``); a later ``up`` reuses it, and refuses storage
formatted for another cluster (a single broker's, say) rather than start nodes that would never
form one.
"""

from __future__ import annotations

import logging

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.stack.kafka_broker import KafkaBroker
from boardstream.stack.kafka_ids import new_cluster_id
from boardstream.stack.kafka_layout import kafka_layout
from boardstream.stack.ports import ListenPort, refuse_held
from boardstream.stack.processes import await_started

logger = logging.getLogger(__name__)


class KafkaCluster:
    def __init__(self, settings: Settings, size: int) -> None:
        self.settings = settings
        self.layout = kafka_layout(settings, size)
        self.brokers = [KafkaBroker(settings, node, self.layout) for node in self.layout.nodes]

    def up(self, timeout_s: float = 120.0) -> list[str]:
        """Start the nodes that are not running (formatting a new cluster's storage first) and
        wait for the whole cluster; one line per node, then the bootstrap servers to use."""
        self.layout.check_ports()
        refuse_held(self.ports_to_take())
        running = {broker.name: broker.process.pid() for broker in self.brokers}
        self._ensure_storage()
        report, starting = [], []
        for broker in self.brokers:
            pid = running[broker.name]
            if pid is not None:
                report.append(f"{broker.name} already running (pid {pid}) on {broker.address}")
                continue
            broker.configure()
            process = broker.launch()
            starting.append(broker.starting(process))
            report.append(f"{broker.name} started (pid {process.pid}) on {broker.address}")
        if starting:
            await_started(starting, self.brokers[0].readiness(), timeout_s)
        servers = self.layout.bootstrap_servers
        report.append(
            f"bootstrap servers: {servers}; other commands reach the cluster, and create topics "
            f"with 3 replicas, with BOARDSTREAM_BOOTSTRAP_SERVERS={servers} "
            f"BOARDSTREAM_BROKERS={self.layout.size}"
        )
        return report

    def ports_to_take(self) -> list[ListenPort]:
        """The ports of the nodes not running yet, which must be free before any starts."""
        return [
            port
            for broker in self.brokers
            if broker.process.pid() is None
            for port in broker.listen_ports()
        ]

    def _ensure_storage(self) -> None:
        """Format every node of a new cluster; accept a cluster formatted before."""
        ids = [broker.cluster_id() for broker in self.brokers]
        if storage_state(ids) == "formatted":
            for broker in self.brokers:
                broker.check_storage()
            return
        if storage_state(ids) == "foreign":
            found = ", ".join(
                f"{b.name}: {i or 'not formatted'}" for b, i in zip(self.brokers, ids, strict=True)
            )
            raise BoardstreamError(
                f"the nodes' storage is not one {self.layout.size}-broker cluster ({found}); "
                f"stop the stack and remove {self.settings.var_dir}/kafka* to start a fresh one"
            )
        cluster_id = new_cluster_id()
        directories = {broker.node.node_id: new_cluster_id() for broker in self.brokers}
        logger.info("formatting the storage of %d nodes as cluster %s", len(ids), cluster_id)
        for broker in self.brokers:
            broker.configure()
            broker.format_storage(cluster_id, self.layout.quorum_arguments(directories))


def storage_state(cluster_ids: list[str | None]) -> str:
    """``new`` (no node formatted), ``formatted`` (every node, for one cluster) or ``foreign``
    (some nodes, or nodes of different clusters)."""
    if not any(cluster_ids):
        return "new"
    if None not in cluster_ids and len(set(cluster_ids)) == 1:
        return "formatted"
    return "foreign"
