"""A single-node Apache Kafka in KRaft combined mode (broker + controller), run from its jars.

The same steps as Kafka's own quickstart: ``StorageTool format --standalone`` once, then
``kafka.Kafka server.properties``. Data and logs live under ``var_dir/kafka``.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from boardstream.errors import BoardstreamError
from boardstream.kafka.clients import admin_client, cluster_metadata
from boardstream.settings import Settings
from boardstream.stack import jars
from boardstream.stack.processes import ManagedProcess

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


def broker_policy(settings: Settings) -> dict[str, str]:
    """What the platform expects of any broker it runs, local or in docker-compose (whose
    consistency test reads it from here): single-node replication, no auto-created topics."""
    return {
        "num.partitions": str(settings.partitions),
        # Topics are created on purpose (`boardstream topics create`), never by a typo.
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # Let the cleaner look for dirty compacted logs every second (compaction tuning).
        "log.cleaner.backoff.ms": "1000",
    }


class KafkaBroker:
    name = "kafka"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.home = settings.var_dir / "kafka"
        self.data_dir = self.home / "data"
        self.config_file = self.home / "server.properties"
        self.log_file = settings.var_dir / "log" / "kafka.log"
        self.process = ManagedProcess(
            "kafka", settings.var_dir / "run" / "kafka.pid", marker=str(self.config_file)
        )

    @property
    def address(self) -> str:
        return f"localhost:{self.settings.kafka_port}"

    def server_properties(self) -> str:
        port, controller = self.settings.kafka_port, self.settings.controller_port
        listener = self._client_listener()
        lines = [
            "process.roles=broker,controller",
            "node.id=1",
            f"controller.quorum.bootstrap.servers=localhost:{controller}",
            f"listeners={listener}://localhost:{port},CONTROLLER://localhost:{controller}",
            f"advertised.listeners={listener}://localhost:{port}",
            "controller.listener.names=CONTROLLER",
            f"inter.broker.listener.name={listener}",
            f"listener.security.protocol.map={listener}:{listener},CONTROLLER:PLAINTEXT",
            f"log.dirs={self.data_dir}",
            *(f"{name}={value}" for name, value in broker_policy(self.settings).items()),
        ]
        if listener == "SASL_PLAINTEXT":
            # Clients and the broker itself (inter-broker) authenticate with SCRAM; the user
            # exists from the first start on (see _format_storage).
            mechanism = self.settings.sasl_mechanism
            jaas = self.settings.to_spark_kafka_options()["kafka.sasl.jaas.config"]
            lines += [
                f"sasl.enabled.mechanisms={mechanism}",
                f"sasl.mechanism.inter.broker.protocol={mechanism}",
                f"listener.name.sasl_plaintext.{mechanism.lower()}.sasl.jaas.config={jaas}",
            ]
        return "\n".join(lines) + "\n"

    def _client_listener(self) -> str:
        """PLAINTEXT, or SASL_PLAINTEXT with SCRAM when the settings ask clients for it."""
        protocol, mechanism = self.settings.security_protocol, self.settings.sasl_mechanism
        if protocol == "PLAINTEXT":
            return protocol
        if protocol == "SASL_PLAINTEXT" and mechanism.startswith("SCRAM-"):
            return protocol
        raise BoardstreamError(
            f"the local broker serves PLAINTEXT or SASL_PLAINTEXT with SCRAM, not {protocol} "
            f"with {mechanism}; point BOARDSTREAM_BOOTSTRAP_SERVERS at your cluster instead"
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

    def _format_storage(self) -> None:
        """Format the KRaft metadata log once; later starts reuse it (and its topics). With
        SASL, the SCRAM user of the settings is created in the same step."""
        users = self.data_dir / "scram-users"
        sasl = self.settings.uses_sasl
        if (self.data_dir / "meta.properties").exists():
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
            return
        scram = []
        if sasl:
            credential = (
                f"name={self.settings.sasl_username},"
                f"password={self.settings.sasl_password.get_secret_value()}"  # type: ignore[union-attr]
            )
            scram = ["--add-scram", f"{self.settings.sasl_mechanism}=[{credential}]"]
        cluster_id = new_cluster_id()
        command = self._java(
            "kafka.tools.StorageTool",
            "format",
            "--standalone",
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
        if sasl:
            users.write_text(f"{self.settings.sasl_username}\n")

    def start(self, timeout_s: float = 90.0) -> int:
        self.home.mkdir(parents=True, exist_ok=True)
        # With SASL it holds the broker's own credentials: readable by its owner only.
        self.config_file.touch(mode=0o600)
        self.config_file.write_text(self.server_properties())
        (self.home / "log4j2.properties").write_text(LOG4J2)
        self._format_storage()
        pid = self.process.start(self._java("kafka.Kafka", str(self.config_file)), self.log_file)
        self._wait_ready(timeout_s)
        return pid

    def _wait_ready(self, timeout_s: float) -> None:
        """Return once the broker answers a metadata request, or explain why it did not."""
        admin = admin_client(self.settings.model_copy(update={"connect_timeout_s": 2.0}))
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.pid() is None:
                raise BoardstreamError(
                    f"Kafka exited while starting; last lines of {self.log_file}:\n"
                    + _tail(self.log_file)
                )
            try:
                metadata = cluster_metadata(admin, self.settings)
            except BoardstreamError:
                metadata = None
            if metadata is not None and metadata.brokers:
                return
            if time.monotonic() > deadline:
                self.process.stop()
                raise BoardstreamError(
                    f"Kafka did not answer on {self.address} within {timeout_s:g}s; see "
                    f"{self.log_file}:\n" + _tail(self.log_file)
                )
            time.sleep(0.5)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def new_cluster_id() -> str:
    """A random KRaft cluster id (URL-safe base64 of a UUID). Like Kafka's own Uuid, never one
    starting with "-": the storage tool's argument parser would take it for an option (it did,
    about once in 64 test sessions)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id
