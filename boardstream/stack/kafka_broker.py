"""A node of the local Apache Kafka in KRaft combined mode (broker + controller), run from its jars.

The same steps as Kafka's own quickstart: ``StorageTool format`` once, then ``kafka.Kafka
server.properties``. A single broker formats itself as a quorum of one (``--standalone``); the
nodes of a cluster on one host are formatted together (``stack/kafka_cluster.py``); a node of a
cluster spread over hosts formats itself, with the voters every host derives alike
(``kafka_layout.hosts_layout``). Data and logs live under ``var_dir/<node name>``.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

from boardstream.errors import BoardstreamError
from boardstream.kafka.clients import admin_client, cluster_metadata
from boardstream.settings import Settings, cluster_replication
from boardstream.stack import jars
from boardstream.stack.kafka_ids import directory_id, new_cluster_id
from boardstream.stack.kafka_layout import (
    PORT_STRIDE,
    KafkaLayout,
    KafkaNode,
    kafka_layout,
    local_layout,
)
from boardstream.stack.ports import ListenPort, env_var
from boardstream.stack.processes import LocalService, Starting, await_started

LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = INFO
"""


def broker_policy(settings: Settings, brokers: int = 1) -> dict[str, str]:
    """What the platform expects of any broker it runs, local or in docker-compose (whose
    consistency test reads it from here): internal topics replicated as the cluster allows
    (see ``cluster_replication``), no auto-created topics."""
    replicas, in_sync = (str(n) for n in cluster_replication(brokers))
    policy = {
        "num.partitions": str(settings.partitions),
        # Topics are created on purpose (`boardstream topics create`), never by a typo.
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": replicas,
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": in_sync,
        "share.coordinator.state.topic.replication.factor": replicas,
        "share.coordinator.state.topic.min.isr": in_sync,
        "group.initial.rebalance.delay.ms": "0",
        # Let the cleaner look for dirty compacted logs every second (compaction tuning).
        "log.cleaner.backoff.ms": "1000",
        # Look for segments past their topic's retention every 10 s (Kafka's default: 5 min),
        # so a topic whose retention is set to seconds or minutes ages as set (docs/RELIABILITY).
        "log.retention.check.interval.ms": "10000",
    }
    if brokers > 1:
        # The defaults of topics created without them, the consumer offsets topic among them.
        policy |= {"default.replication.factor": replicas, "min.insync.replicas": in_sync}
    return policy


class KafkaBroker(LocalService):
    """Node ``node`` of ``layout`` (by default this host's own: the single broker, node 1 of
    one, or with ``kafka_node`` set its node of a cluster spread over hosts)."""

    name = "kafka"

    def __init__(
        self, settings: Settings, node: KafkaNode | None = None, layout: KafkaLayout | None = None
    ) -> None:
        self.layout = layout or local_layout(settings)
        self.node = node or self.layout.own_node
        # A host's one node of a spread cluster keeps the single broker's name, home and pid file.
        self.name = "kafka" if self.layout.spread else self.node.name
        config_file = settings.var_dir / self.name / "server.properties"
        super().__init__(settings, marker=str(config_file))
        self.config_file = config_file
        self.data_dir = self.home / "data"
        # One certificate (for localhost) serves every node: clients trust one CA file.
        self.tls = BrokerCertificate(settings.var_dir / "kafka" / "tls")

    @property
    def address(self) -> str:
        return self.node.address

    def listen_ports(self) -> list[ListenPort]:
        """Its client and controller ports; a cluster's node n takes the settings' + 2(n-1)."""
        strided = self.layout.size > 1 and not self.layout.spread
        after = f" (node n takes its port + {PORT_STRIDE}(n-1))" if strided else ""
        return [
            ListenPort(
                self.node.port, f"{self.name}'s client", env_var("bootstrap_servers") + after
            ),
            ListenPort(
                self.node.controller_port,
                f"{self.name}'s controller",
                env_var("controller_port") + after,
            ),
        ]

    def server_properties(self) -> str:
        node, listener = self.node, self._client_listener()
        policy = broker_policy(self.settings, self.layout.size)
        lines = [
            "process.roles=broker,controller",
            f"node.id={node.node_id}",
            f"controller.quorum.bootstrap.servers={self.layout.controllers}",
            f"listeners={listener}://{node.address},CONTROLLER://{node.controller}",
            f"advertised.listeners={listener}://{node.address}",
            "controller.listener.names=CONTROLLER",
            f"inter.broker.listener.name={listener}",
            f"listener.security.protocol.map={listener}:{listener},CONTROLLER:PLAINTEXT",
            f"log.dirs={self.data_dir}",
            *(f"{name}={value}" for name, value in policy.items()),
        ]
        if self.settings.uses_sasl:
            # Clients and the broker itself (inter-broker) authenticate with SCRAM; the user
            # exists from the first start on (see _format_storage).
            mechanism = self.settings.sasl_mechanism
            jaas = self.settings.to_spark_kafka_options()["kafka.sasl.jaas.config"]
            lines += [
                f"sasl.enabled.mechanisms={mechanism}",
                f"sasl.mechanism.inter.broker.protocol={mechanism}",
                f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config={jaas}",
            ]
        if self.settings.uses_tls:
            # The broker's own client (inter-broker) trusts the broker's certificate.
            lines += [
                "ssl.keystore.type=PKCS12",
                f"ssl.keystore.location={self.tls.keystore}",
                f"ssl.keystore.password={self.tls.password()}",
                f"ssl.key.password={self.tls.password()}",
                "ssl.truststore.type=PEM",
                f"ssl.truststore.location={self.tls.certificate}",
            ]
        return "\n".join(lines) + "\n"

    def _client_listener(self) -> str:
        """The settings' security protocol, when the local broker can serve it: TLS with a
        certificate of its own, SASL with SCRAM."""
        protocol, mechanism = self.settings.security_protocol, self.settings.sasl_mechanism
        if not self.settings.uses_sasl or mechanism.startswith("SCRAM-"):
            return protocol
        raise BoardstreamError(
            f"the local broker serves SASL with SCRAM only, not {protocol} with {mechanism}; "
            "point BOARDSTREAM_BOOTSTRAP_SERVERS at your cluster instead"
        )

    def _java(self, main: str, *args: str) -> list[str]:
        java = shutil.which("java")
        if java is None:
            raise BoardstreamError("java is not installed; bin/setup installs OpenJDK 17")
        classpath = ":".join(
            str(jar) for jar in jars.require(jars.KAFKA_BROKER, self.settings.jars_dir)
        )
        return [
            java,
            "-Xms256m",
            "-Xmx1g",
            f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
            "-cp",
            classpath,
            main,
            *args,
        ]

    def cluster_id(self) -> str | None:
        """The cluster this node's storage was formatted for, or None while it is not."""
        return self.meta().get("cluster.id")

    def meta(self) -> dict[str, str]:
        """What formatting wrote in ``meta.properties`` (cluster, node and directory ids), or
        nothing while the storage is not formatted."""
        try:
            lines = (self.data_dir / "meta.properties").read_text().splitlines()
        except FileNotFoundError:
            return {}
        pairs = (line.partition("=") for line in lines if not line.startswith("#"))
        return {key.strip(): value.strip() for key, sep, value in pairs if sep}

    def format_storage(self, cluster_id: str, quorum: list[str]) -> None:
        """Format the KRaft metadata log (``quorum``: the storage tool's voter arguments, see
        ``KafkaLayout.quorum_arguments``). With SASL, the SCRAM user of the settings is created
        in the same step."""
        scram = []
        if self.settings.uses_sasl:
            credential = (
                f"name={self.settings.sasl_username},"
                f"password={self.settings.sasl_password.get_secret_value()}"  # type: ignore[union-attr]
            )
            scram = ["--add-scram", f"{self.settings.sasl_mechanism}=[{credential}]"]
        command = self._java(
            "kafka.tools.StorageTool",
            "format",
            *quorum,
            "-t",
            cluster_id,
            "-c",
            str(self.config_file),
            *scram,
        )
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise BoardstreamError(
                f"formatting Kafka storage failed:\n{result.stdout}{result.stderr}"
            )
        if self.settings.uses_sasl:
            (self.data_dir / "scram-users").write_text(f"{self.settings.sasl_username}\n")

    def _ensure_storage(self) -> None:
        """A single broker, or a node of a spread cluster, formats its storage on its first
        start; later starts reuse it (and its topics), if it was formatted under these settings
        and for this node."""
        if self.cluster_id() is None:
            if self.layout.spread:
                cluster_id = self.layout.cluster_id or ""
                voters = self.layout.quorum_arguments(self.layout.directory_ids())
                self.format_storage(cluster_id, voters)
                return
            if self.layout.size > 1:
                raise BoardstreamError(
                    f"{self.name}'s storage ({self.data_dir}) is not formatted: a cluster's "
                    f"nodes are formatted together (`boardstream stack up --brokers "
                    f"{self.layout.size}`)"
                )
            self.format_storage(new_cluster_id(), self.layout.quorum_arguments({}))
            return
        self.check_storage()

    def check_storage(self) -> None:
        """Refuse formatted storage these settings cannot start: without their SCRAM user, or a
        cluster's node 1 started as a single broker (it would wait for its voters forever)."""
        users = self.data_dir / "scram-users"
        sasl = self.settings.uses_sasl
        if (
            sasl and self.settings.sasl_username not in users.read_text().split()
            if users.exists()
            else sasl
        ):
            raise BoardstreamError(
                f"the local broker's storage ({self.data_dir}) has no SCRAM user "
                f"{self.settings.sasl_username!r}: it was formatted under other settings. "
                "Stop the stack and remove that directory to start a fresh broker."
            )
        if self.layout.size == 1 and self._second_node().cluster_id() == self.cluster_id():
            raise BoardstreamError(
                f"{self.data_dir} holds node 1 of a 3-broker cluster: start it with "
                "`boardstream stack up --brokers 3`, or stop the stack and remove "
                f"{self.settings.var_dir}/kafka* for a fresh single broker"
            )
        meta = self.meta()
        found = (meta.get("cluster.id"), meta.get("node.id"))
        if self.layout.spread and found != (self.layout.cluster_id, str(self.node.node_id)):
            raise BoardstreamError(
                f"{self.data_dir} holds node {found[1]} of cluster {found[0]}, not node "
                f"{self.node.node_id} of BOARDSTREAM_KAFKA_CLUSTER_ID {self.layout.cluster_id}: "
                f"stop the stack and remove {self.home} for a fresh node"
            )
        if self.layout.size == 1 and _spread_node(meta):
            raise BoardstreamError(
                f"{self.data_dir} holds node {found[1]} of a cluster spread over hosts: start it "
                f"with BOARDSTREAM_KAFKA_NODE={found[1]} and BOARDSTREAM_KAFKA_CLUSTER_ID="
                f"{found[0]}, or stop the stack and remove {self.home} for a fresh single broker"
            )

    def _second_node(self) -> KafkaBroker:
        cluster = kafka_layout(self.settings, 3)
        return KafkaBroker(self.settings, cluster.nodes[1], cluster)

    def configure(self) -> None:
        """Write the node's configuration (and its TLS identity), as starting and formatting
        need it."""
        self.home.mkdir(parents=True, exist_ok=True)
        if self.settings.uses_tls:
            self.tls.ensure()
            if self.settings.ssl_ca_location is None:
                raise BoardstreamError(
                    "the local broker serves TLS with its own certificate, which clients must "
                    f"trust: set BOARDSTREAM_SSL_CA_LOCATION={self.tls.certificate}"
                )
        # With SASL or TLS it holds the broker's secrets: readable by its owner only.
        self.config_file.touch(mode=0o600)
        self.config_file.write_text(self.server_properties())
        (self.home / "log4j2.properties").write_text(LOG4J2)

    def check_host(self) -> None:
        """Spread over hosts, before anything starts: this host must have its node's address
        (the host of its bootstrap server), and serve no TLS (each host's certificate would be
        its own, for localhost, which the other nodes do not trust)."""
        if not self.layout.spread:
            return
        node = self.node
        if self.settings.uses_tls:
            raise BoardstreamError(
                f"a cluster spread over hosts serves no TLS yet: {self.settings.security_protocol} "
                "needs a certificate for each host's address that every node trusts"
            )
        try:
            family, kind, _, _, address = socket.getaddrinfo(node.host, 0, 0, socket.SOCK_STREAM)[0]
            with socket.socket(family, kind) as probe:
                probe.bind(address)
        except OSError as error:
            raise BoardstreamError(
                f"BOARDSTREAM_KAFKA_NODE={node.node_id} is at {node.address} (entry "
                f"{node.node_id} of BOARDSTREAM_BOOTSTRAP_SERVERS), an address this host does "
                f"not have ({error.strerror or error}): run node {node.node_id} on the host "
                f"{node.host}, or set BOARDSTREAM_KAFKA_NODE to this host's entry"
            ) from None

    def how_clients_reach_it(self) -> str:
        """Spread over hosts: which node this is, and how other commands reach the cluster."""
        servers = self.layout.bootstrap_servers
        return (
            f"{self.name} is node {self.node.node_id} of {self.layout.size} of cluster "
            f"{self.layout.cluster_id}; other commands reach the cluster, and create topics with "
            f"3 replicas, with BOARDSTREAM_BOOTSTRAP_SERVERS={servers} "
            f"BOARDSTREAM_BROKERS={self.layout.size}"
        )

    def launch(self) -> subprocess.Popen[bytes]:
        """Start the node on its formatted storage; it is ready once its cluster lists it."""
        return self.process.start(self._java("kafka.Kafka", str(self.config_file)), self.log_file)

    def start(self, timeout_s: float | None = None) -> int:
        """Start this node (formatting its storage the first time, if it formats alone) and
        return once the metadata lists every node of its layout: within 90 s, or 120 s for a
        node of a spread cluster, whose other nodes start on their hosts meanwhile."""
        self.check_host()
        self.configure()
        self._ensure_storage()
        process = self.launch()
        timeout_s = timeout_s or (120.0 if self.layout.spread else 90.0)
        await_started([self.starting(process)], self.readiness(), timeout_s)
        return process.pid

    def starting(self, process: subprocess.Popen[bytes]) -> Starting:
        if self.layout.spread:
            what = f"Kafka node {self.node.node_id} of {self.layout.size}"
        else:
            what = "Kafka" if self.layout.size == 1 else f"Kafka {self.name}"
        return Starting(self, process, f"{what} on {self.address}")

    def readiness(self) -> Callable[[], bool]:
        """A check that the metadata lists every node of the layout (asked of all of them)."""
        settings = self.settings.model_copy(
            update={"bootstrap_servers": self.layout.bootstrap_servers, "connect_timeout_s": 2.0}
        )
        admin, nodes = admin_client(settings), {node.node_id for node in self.layout.nodes}

        def all_listed() -> bool:
            try:
                return nodes <= set(cluster_metadata(admin, settings).brokers)
            except BoardstreamError:
                return False

        return all_listed


class BrokerCertificate:
    """The local broker's TLS identity: a self-signed certificate for ``localhost`` made once
    with the JDK's keytool (a PKCS12 keystore, its random password beside it, readable by the
    owner only), and the certificate as PEM for clients' ``ssl.ca.location``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.keystore = directory / "broker.p12"
        self.certificate = directory / "broker.pem"
        self.password_file = directory / "keystore-password"

    def password(self) -> str:
        return self.password_file.read_text().strip()

    def ensure(self) -> None:
        if self.keystore.exists() and self.certificate.exists():
            return
        keytool = shutil.which("keytool")
        if keytool is None:
            raise BoardstreamError("keytool (JDK) is not installed; bin/setup installs OpenJDK 17")
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.password_file.touch(mode=0o600)
        self.password_file.write_text(secrets.token_urlsafe(24) + "\n")
        self.keystore.unlink(missing_ok=True)
        store = ["-keystore", str(self.keystore), "-storepass", self.password()]
        for command in (
            [
                "-genkeypair",
                "-alias",
                "broker",
                "-keyalg",
                "RSA",
                "-keysize",
                "2048",
                "-validity",
                "3650",
                "-dname",
                "CN=localhost",
                "-ext",
                "SAN=dns:localhost,ip:127.0.0.1",
                "-storetype",
                "PKCS12",
                *store,
            ],
            ["-exportcert", "-rfc", "-alias", "broker", "-file", str(self.certificate), *store],
        ):
            result = subprocess.run([keytool, *command], capture_output=True, text=True)
            if result.returncode != 0:
                raise BoardstreamError(
                    f"keytool {command[0]} failed for the local broker's certificate:\n"
                    f"{result.stdout}{result.stderr}"
                )


def _spread_node(meta: dict[str, str]) -> bool:
    """Whether storage was formatted as a node of a spread cluster: its directory id is the
    one derived from its cluster and node ids, which no random one is."""
    try:
        derived = directory_id(meta["cluster.id"], int(meta["node.id"]))
    except (KeyError, ValueError):
        return False
    return meta.get("directory.id") == derived
