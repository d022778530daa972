"""The one place boardstream's configuration comes from.

The CLI, the Spark jobs, the DAGs and the Airflow plugin all build a :class:`Settings`, so the
three Kafka clients (confluent-kafka, the Spark connector, Airflow's Kafka hook) can never
disagree about where the broker is or what a topic is called. Every field is read from an
environment variable ``BOARDSTREAM_<FIELD>`` at construction time (not at import), so tests
can set variables and build a fresh object.
"""

from __future__ import annotations

import base64
import contextlib
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from boardstream.locations import checkpoint_uri, child
from boardstream.pipelines import SHIPPED, Reconcile, Slo

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# Brokers the local stack can run: one, or a quorum of three that survives losing any one.
CLUSTER_SIZES = (1, 3)


def cluster_replication(brokers: int) -> tuple[int, int]:
    """Replicas and min in-sync replicas on a cluster of ``brokers``: from three brokers on,
    three copies of which two must hold a write before it is acknowledged (acks=all), so one
    broker can fail without losing an acknowledged record or refusing writes."""
    return (3, 2) if brokers >= 3 else (1, 1)


class Settings(BaseSettings):
    """Typed settings; each field's env var is ``BOARDSTREAM_`` + its upper-cased name."""

    model_config = SettingsConfigDict(
        env_prefix="BOARDSTREAM_",
        env_file=PROJECT_ROOT / ".env",  # optional and git-ignored; .env.example lists the keys
        frozen=True,
        extra="ignore",
    )

    var_dir: Path = Field(
        default=PROJECT_ROOT / "var",
        description="Where the local stack keeps data, logs, pid files, jars and checkpoints.",
    )
    jar_cache: Path | None = Field(
        default=None, description="Where fetched jars live; default: var_dir/jars."
    )
    bootstrap_servers: str = Field(
        default="localhost:9092", description="Kafka bootstrap servers, host:port[,host:port]."
    )
    controller_port: int = Field(
        default=9093, description="Port of the local KRaft controller listener."
    )
    kafka_host: str = Field(
        default="localhost",
        description="Address the local Kafka nodes (stack up) listen on, controllers too, and "
        "advertise to clients: a test host's (stack/hosts.py) for a broker other hosts reach.",
    )
    kafka_node: int | None = Field(
        default=None,
        description="The node of a Kafka cluster spread over hosts that this host runs (stack "
        "up): node n is the n-th of the bootstrap servers, which list the cluster's three "
        "nodes, its controller on the same host at controller_port. Needs kafka_cluster_id.",
    )
    kafka_cluster_id: str | None = Field(
        default=None,
        description="The cluster id every host of a cluster spread over hosts (kafka_node) "
        "formats its node's storage with: a Kafka Uuid, 22 characters of URL-safe base64.",
    )
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of the board_detail database; default: SQLite under var_dir.",
    )
    lease_ttl_s: float = Field(
        default=30,
        ge=1,
        description="A lease in the database (one driver per checkpoint, one supervisor per "
        "stream's start) is free again at most this long after its holder stopped renewing "
        "it: killed, its host lost or cut off. Its holder renews it every third of this.",
    )
    postgres_port: int = Field(default=5432, description="Port of the local PostgreSQL server.")
    postgres_host: str = Field(
        default="localhost",
        description="Address the local PostgreSQL (stack up --postgres) listens on and its URL "
        "names: a test host's (stack/hosts.py) for a database other hosts reach, which then "
        "trusts every client of its subnets (the local stack has no passwords).",
    )
    checkpoint_root: str | None = Field(
        default=None,
        description="Root of Spark checkpoints: a local path or a Hadoop filesystem URI "
        "(hdfs://namenode:8020/boardstream/checkpoints); default: var_dir/checkpoints.",
    )
    pipelines_dir: Path = Field(
        default=SHIPPED,
        description="The directory of pipeline declarations (one YAML file each, "
        "docs/PIPELINES.md); default: the ones installed with the package.",
    )
    member_topic: str = "member"
    board_topic: str = "board"
    board_detail_topic: str = "board-detail"
    unmatched_topic: str = "board-unmatched"
    dlq_topic: str = "board-dlq"
    partitions: int = Field(default=3, ge=1, description="Default partition count of new topics.")
    topic_retention_ms: int = Field(
        default=7 * 24 * 3600 * 1000,
        ge=-1,
        description="retention.ms of the board topic topics create makes and the floor of the "
        "output topics' (-1: forever); an output is never given less than an existing board "
        "keeps, so reconciliation's evidence outlives its source (kafka/retention.py).",
    )
    member_partitions: int | None = Field(default=None, ge=1)
    board_partitions: int | None = Field(default=None, ge=1)
    replication_factor: int = Field(
        default=1,
        ge=1,
        description="Replication factor of new topics; 3 by default with brokers=3.",
    )
    min_insync_replicas: int | None = Field(
        default=None,
        ge=1,
        description="min.insync.replicas of new topics; default: the broker's (2 with brokers=3).",
    )
    brokers: int = Field(
        default=1,
        description="Brokers of the local stack (stack up --brokers): 1, or 3 in a KRaft quorum "
        "whose topics are replicated three times.",
    )
    spark_master: str = Field(
        default="local[2]",
        description="Where every job runs (spark-submit --master, Airflow's spark_default): "
        "local mode, or a cluster such as `stack up --spark-cluster`'s spark://127.0.0.1:7077.",
    )
    spark_driver_memory: str = Field(
        default="2g", description="Driver heap (in local mode also the executors')."
    )
    spark_master_port: int = Field(
        default=7077,
        description="Port of the local Spark master (stack up --spark-cluster); jobs go there "
        "with BOARDSTREAM_SPARK_MASTER=spark://<spark_master_host>:<port>.",
    )
    spark_master_host: str = Field(
        default="127.0.0.1",
        description="Address the local Spark master (stack up --spark-cluster, --only "
        "spark-master) binds to and advertises, and local workers register with: a test "
        "host's (stack/hosts.py) for a master whose workers and drivers are on other hosts.",
    )
    spark_master_ui_port: int = Field(
        default=8090,
        description="Port of the local Spark master's web UI and JSON (not 8080: Airflow's).",
    )
    spark_worker_ui_port: int = Field(
        default=8091, description="Port of the local Spark worker's web UI."
    )
    stream_join_cores: int = Field(
        default=2,
        ge=1,
        description="Cores the live join takes on a Spark cluster (spark.cores.max); a standalone "
        "app takes every free core otherwise, and the sink would get none.",
    )
    stream_sink_cores: int = Field(
        default=1, ge=1, description="Cores the live sink takes on a Spark cluster."
    )
    spark_worker_cores: int = Field(
        # Cores are task slots, not CPUs: a worker may offer more than the machine has.
        default_factory=lambda data: max(
            os.cpu_count() or 2,
            data.get("stream_join_cores", 0) + data.get("stream_sink_cores", 0),
        ),
        ge=1,
        description="Cores the local Spark worker offers its executors; default: this machine's, "
        "or the live streams' (join and sink) when they take more, so that both can run.",
    )
    spark_worker_memory: str = Field(
        default="2g", description="Memory the local Spark worker offers its executors."
    )
    hdfs_host: str = Field(
        default="127.0.0.1",
        description="Address the local HDFS NameNode and DataNode (stack up --hdfs) bind to and "
        "clients reach them at.",
    )
    hdfs_namenode_port: int = Field(
        default=9000,
        description="Port of the local HDFS NameNode's RPC: the file system's URI, "
        "hdfs://<hdfs_host>:<port> (Hadoop's own default 9000).",
    )
    hdfs_namenode_http_port: int = Field(
        default=9870, description="Port of the local HDFS NameNode's web UI and JMX."
    )
    hdfs_datanode_port: int = Field(
        default=9866, description="Port of the local HDFS DataNode's data transfer (blocks)."
    )
    hdfs_datanode_http_port: int = Field(
        default=9864, description="Port of the local HDFS DataNode's web UI."
    )
    hdfs_datanode_ipc_port: int = Field(
        default=9867, description="Port of the local HDFS DataNode's IPC (admin commands)."
    )
    spark_event_log_dir: str | None = Field(
        default=None,
        description="Where every Spark application writes its event log: a path or a Hadoop "
        "filesystem URI (hdfs://127.0.0.1:9000/boardstream/spark-events) that a Spark history "
        "server, or an operator on any host, reads a driver's record from after the driver is "
        "gone; made if missing. Default: none written.",
    )
    hdfs_replication: int | None = Field(
        default=None,
        ge=1,
        description="Copies of each file the Spark sessions write to HDFS (checkpoints): the "
        "writing client chooses. Default: Hadoop's (3); the local stack's one DataNode holds 1.",
    )
    airflow_port: int = Field(
        default=8080, description="Port of the local Airflow UI and API (stack up --airflow)."
    )
    airflow_user: str = Field(
        default="admin", description="The local Airflow's user; its password is generated."
    )
    airflow_host: str | None = Field(
        default=None,
        description="Address the local Airflow's API server binds to and advertises, and edge "
        "workers reach it at: a test host's (stack/hosts.py) for an Airflow other hosts use. "
        "Default: Airflow's binding (every address), reached at localhost.",
    )
    airflow_executor: str | None = Field(
        default=None,
        description="The local Airflow's [core] executor. Default: LocalExecutor, under "
        "`airflow standalone`; another (airflow.providers.edge3.executors.EdgeExecutor, which "
        "standalone would replace) runs the same components one by one.",
    )
    airflow_database_url: SecretStr | None = Field(
        default=None,
        description="SQLAlchemy URL of the local Airflow's metadata database (PostgreSQL for a "
        "cluster's Airflow); it may hold a password, so from the environment or .env. "
        "Default: SQLite in Airflow's home.",
    )
    airflow_jwt_secret: SecretStr | None = Field(
        default=None,
        description="The key Airflow's API server and its edge workers sign and check their "
        "tokens with ([api_auth] jwt_secret), the same on every host; from the environment or "
        ".env, never the repo. Default: one Airflow generates in its home (one host only).",
    )
    airflow_dags_folder: Path = Field(
        default=PROJECT_ROOT / "dags",
        description="The DAG files the local Airflow and its edge workers read.",
    )
    edge_worker_hostname: str | None = Field(
        default=None,
        description="The name an edge worker (stack up --only edge-worker) registers under, one "
        "per worker. Default: this machine's host name.",
    )
    edge_worker_queues: str | None = Field(
        default=None,
        description="The queues an edge worker takes tasks from, comma-separated; default: all.",
    )
    data_docs_retention: int = Field(
        default=20, ge=1, description="Reconciliation runs whose Data Docs pages are kept."
    )
    reconcile_watch_rows: int = Field(
        default=Reconcile().watch_rows,
        ge=1,
        description="Rows of board_detail an incremental reconciliation re-hashes to watch old "
        "rows: a larger table is watched in slices of this many rows, one per run, so a change "
        "to an old row is found within ceil(rows / this) runs instead of the next one.",
    )
    reconcile_in_process_max_records: int = Field(
        default=200_000,
        ge=0,
        description="A full reconciliation whose topics and table hold at most this many records "
        "and rows runs its checks in DuckDB, in process, on the inputs collected to the driver; "
        "a larger one in Spark (0: always Spark). Below it Spark's fixed cost per job is most of "
        "a run's time (docs/BENCHMARKS.md). An incremental run with more new records than this "
        "is a full one.",
    )
    reconcile_in_process_memory_mb: int = Field(
        default=2048,
        ge=64,
        description="The memory DuckDB may take for a reconciliation's in-process checks "
        "(its memory_limit); past it DuckDB spills to var_dir/reconciliation/spill rather than "
        "fail. An incremental run whose new records are more than "
        "reconcile_in_process_max_records runs as a full one, in Spark (docs/SETTINGS.md).",
    )
    reconcile_heartbeat_timeout_s: float = Field(
        default=300,
        gt=0,
        description="A reconciliation run refreshes its heartbeat 20 times in this (shown with "
        "the run); a run waits this long (or the lease TTL, if longer) for another's ledger "
        "lease and ledger lock. A run that died is closed by the next, once that holds the "
        "ledger's lease: within the lease TTL (5 minutes, as Airflow's "
        "task_instance_heartbeat_timeout).",
    )
    stream_max_batch_age_s: int = Field(
        default=Slo().max_batch_age_ms // 1000,
        gt=0,
        description="The streams' SLO (Pipeline health, the live stream's watch): a streaming "
        "job's last batch (or a live one's idle heartbeat) at most this long ago (default 20 "
        "minutes, twice the pipeline's schedule, as reconciliation's stall age; a live stream "
        "reports every 10 s, so 60 suits it).",
    )
    stream_max_lag: int = Field(
        default=Slo().max_lag,
        ge=0,
        description="The streams' SLO: a streaming job's last batch at most this many "
        "offsets behind the latest; a live stream's, at most this many records its checkpoint "
        "has not committed (default: one sink micro-batch, its max offsets per trigger).",
    )
    connect_timeout_s: float = Field(
        default=10.0, gt=0, description="How long to wait for the broker before giving up."
    )
    security_protocol: Literal["PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "SSL"] = Field(
        default="PLAINTEXT",
        description="Kafka security.protocol; with SASL_PLAINTEXT the local broker requires SCRAM.",
    )
    sasl_mechanism: Literal["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"] = Field(
        default="SCRAM-SHA-512", description="SASL mechanism (SASL_* protocols)."
    )
    sasl_username: str | None = Field(default=None, description="SASL user (SASL_* protocols).")
    sasl_password: SecretStr | None = Field(
        default=None, description="SASL password; from the environment or .env, never the repo."
    )
    ssl_ca_location: Path | None = Field(
        default=None, description="PEM file of the CA that signed the brokers' certificates."
    )

    @field_validator("bootstrap_servers")
    @classmethod
    def _servers_have_ports(cls, value: str) -> str:
        for server in value.split(","):
            host, sep, port = server.strip().rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValueError(f"expected host:port[,host:port], got {value!r}")
        return value

    @field_validator("kafka_cluster_id")
    @classmethod
    def _a_kafka_uuid(cls, value: str | None) -> str | None:
        """Kafka's own form (``kafka-storage random-uuid``): 16 bytes as URL-safe base64 without
        padding, not all zeros, and not starting with "-" (the storage tool would take it for
        an option)."""
        if value is None:
            return None
        try:
            raw = base64.urlsafe_b64decode(value + "==")
        except ValueError:
            raw = b""
        canonical = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
        if len(raw) != 16 or canonical != value or value.startswith("-") or not any(raw):
            raise ValueError(
                f"expected a Kafka cluster id (22 characters of URL-safe base64, not starting "
                f"with '-', as `kafka-storage random-uuid` prints), got {value!r}"
            )
        return value

    @field_validator("checkpoint_root", "spark_event_log_dir", mode="before")
    @classmethod
    def _checkpoint_root_is_a_location(cls, value: object) -> str | None:
        """A path or a Hadoop filesystem URI (``hdfs://nn:8020/c``), as a URI; a relative path
        is made absolute here, so a driver started elsewhere names the same directory."""
        text = "" if value is None else str(value).strip()
        return checkpoint_uri(text) if text else None

    @field_validator("topic_retention_ms")
    @classmethod
    def _retention_keeps_records(cls, value: int) -> int:
        if value == 0:
            raise ValueError("0 would delete records at once; -1 keeps them forever")
        return value

    @model_validator(mode="before")
    @classmethod
    def _a_cluster_replicates(cls, data: Any) -> Any:
        """On a cluster of three, new topics are replicated as production's are, unless the
        replication settings are given."""
        if isinstance(data, dict) and str(data.get("brokers", 1)).strip() != "1":
            with contextlib.suppress(ValueError):  # not a number: the field's own error says so
                replicas, in_sync = cluster_replication(int(data["brokers"]))
                data = {"replication_factor": replicas, "min_insync_replicas": in_sync, **data}
        return data

    @model_validator(mode="after")
    def _replication_fits(self) -> Settings:
        if self.brokers not in CLUSTER_SIZES:
            raise ValueError(f"brokers: the local stack runs 1 or 3, not {self.brokers}")
        if (self.min_insync_replicas or 1) > self.replication_factor:
            raise ValueError(
                f"min_insync_replicas {self.min_insync_replicas} is more than the replication "
                f"factor {self.replication_factor}: no write could ever be acknowledged"
            )
        return self

    @model_validator(mode="after")
    def _sasl_has_credentials(self) -> Settings:
        if self.uses_sasl and not (self.sasl_username and self.sasl_password):
            raise ValueError(
                f"security_protocol {self.security_protocol} needs BOARDSTREAM_SASL_USERNAME "
                "and BOARDSTREAM_SASL_PASSWORD"
            )
        return self

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol.endswith("SSL")

    @property
    def output_topics(self) -> tuple[str, str, str]:
        """The join's outputs: reconciliation's evidence of what became of each board."""
        return (self.board_detail_topic, self.unmatched_topic, self.dlq_topic)

    @property
    def join_tick_topic(self) -> str:
        """The join's internal tick topic: one record before each available-now run gives the
        run a data batch, in which expired unmatched timers fire (see joins/job.py)."""
        return f"{self.board_topic}-join-tick"

    @property
    def database(self) -> str:
        """The SQLAlchemy URL actually used (the SQLite default lives under ``var_dir``)."""
        return self.database_url or f"sqlite:///{self.var_dir / 'boardstream.db'}"

    @property
    def checkpoints(self) -> str:
        """The checkpoints' root, as a URI (a local one ``file://``)."""
        return self.checkpoint_root or checkpoint_uri(self.var_dir / "checkpoints")

    def checkpoint(self, query: str) -> str:
        """The default checkpoint of the query (job) ``query``."""
        return child(self.checkpoints, query)

    @property
    def data_docs(self) -> Path:
        """The Great Expectations Data Docs site: a page per reconciliation run, offline."""
        return self.var_dir / "reconciliation" / "data_docs"

    @property
    def reconcile_spill(self) -> Path:
        """Where DuckDB spills an in-process reconciliation's checks past their memory bound."""
        return self.var_dir / "reconciliation" / "spill"

    @property
    def jars_dir(self) -> Path:
        return self.jar_cache or self.var_dir / "jars"

    @property
    def hdfs_uri(self) -> str:
        """The local HDFS (``stack up --hdfs``), as paths name it: ``hdfs://host:port/...``."""
        return f"hdfs://{self.hdfs_host}:{self.hdfs_namenode_port}"

    @property
    def airflow_url(self) -> str:
        """The local Airflow's API server, as clients and edge workers reach it."""
        return f"http://{self.airflow_host or 'localhost'}:{self.airflow_port}"

    @property
    def kafka_port(self) -> int:
        """Port of the first bootstrap server: the one the local broker listens on."""
        return int(self.bootstrap_servers.split(",")[0].rpartition(":")[2])

    def topic_partitions(self, topic: str) -> int:
        """Partitions for ``topic``: ``member`` and ``board`` may differ, as in production."""
        if topic == self.member_topic and self.member_partitions:
            return self.member_partitions
        if topic == self.board_topic and self.board_partitions:
            return self.board_partitions
        return self.partitions

    def with_topic_prefix(self, prefix: str, **changes: object) -> Settings:
        """A copy whose five topics are ``<prefix>-member``, ``-board``, ``-board-detail``,
        ``-board-unmatched`` and ``-board-dlq``: isolated pipelines on one broker (tests,
        benchmarks, side-by-side runs)."""
        topics = {
            "member_topic": f"{prefix}-member",
            "board_topic": f"{prefix}-board",
            "board_detail_topic": f"{prefix}-board-detail",
            "unmatched_topic": f"{prefix}-board-unmatched",
            "dlq_topic": f"{prefix}-board-dlq",
        }
        return self.model_copy(update={**topics, **changes})

    def _connection(self) -> dict[str, str]:
        """The Kafka connection (SASL and TLS included) by librdkafka's names: the one mapping
        every client's configuration below is derived from, so no two can disagree."""
        connection = {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": self.security_protocol,
        }
        if self.uses_sasl:
            connection["sasl.mechanism"] = self.sasl_mechanism
            connection["sasl.username"] = self.sasl_username or ""
            connection["sasl.password"] = self._password()
        if self.ssl_ca_location:
            connection["ssl.ca.location"] = str(self.ssl_ca_location)
        return connection

    def to_confluent(self) -> dict[str, str | int | float | bool]:
        """Base librdkafka configuration shared by every confluent-kafka client (and the
        Airflow Kafka connection, whose extra is this same dictionary)."""
        return dict(self._connection())

    def to_spark_kafka_options(self) -> dict[str, str]:
        """The same connection, as options of Spark's Kafka source and sink (Java client
        names; Spark redacts the JAAS line in plans and logs since it contains "password")."""
        connection = self._connection()
        options = {f"kafka.{key}": connection[key] for key in _JAVA_NAMED if key in connection}
        if self.uses_sasl:
            module = (
                "org.apache.kafka.common.security.plain.PlainLoginModule"
                if self.sasl_mechanism == "PLAIN"
                else "org.apache.kafka.common.security.scram.ScramLoginModule"
            )
            options["kafka.sasl.jaas.config"] = (
                f'{module} required username="{connection["sasl.username"]}" '
                f'password="{connection["sasl.password"]}";'
            )
        if "ssl.ca.location" in connection:
            options["kafka.ssl.truststore.type"] = "PEM"
            options["kafka.ssl.truststore.location"] = connection["ssl.ca.location"]
        return options

    def to_spark_kafka_source_options(self) -> dict[str, str]:
        """The options of Spark's Kafka source, batch or stream: the connection and the
        fetches' wait at the broker (:data:`SOURCE_FETCH`)."""
        return {**self.to_spark_kafka_options(), **SOURCE_FETCH}

    def to_env(self) -> dict[str, str]:
        """Every setting that is set, as the ``BOARDSTREAM_*`` variables that read back to these
        settings in a child process (a detached stream's driver); secrets in clear, so only for
        a child's environment, never for a file or a log."""
        env = {}
        for name, value in self.model_dump().items():
            if value is None:
                continue
            if isinstance(value, SecretStr):
                value = value.get_secret_value()
            env[f"BOARDSTREAM_{name.upper()}"] = str(value)
        return env

    def to_spark_kafka_sink_options(self) -> dict[str, str]:
        """The options of Spark's Kafka sink: the connection; acks=all stated rather than left
        to the Java client's default (all since Kafka 3.0), since on a replicated cluster
        (min.insync.replicas=2) it is what keeps an acknowledged record through a broker's
        loss; and the producer's batching (:data:`SINK_BATCHING`)."""
        return {**self.to_spark_kafka_options(), "kafka.acks": "all", **SINK_BATCHING}

    def kafka_env(self) -> dict[str, str]:
        """The Kafka connection as ``BOARDSTREAM_*`` variables, for a child process (a job
        under spark-submit) that must reach the same cluster the same way."""
        return {
            f"BOARDSTREAM_{_FIELDS[key].upper()}": value
            for key, value in self._connection().items()
        }

    def with_kafka_config(self, config: dict[str, Any]) -> Settings:
        """These settings pointed at the cluster a confluent-style config describes (the extra
        of an Airflow Kafka connection), validated like any other settings."""
        fields = {**_FIELDS, "sasl.mechanisms": "sasl_mechanism"}
        update = {field: config[key] for key, field in fields.items() if key in config}
        return type(self)(**{**self.model_dump(), **update})

    def _password(self) -> str:
        return self.sasl_password.get_secret_value() if self.sasl_password else ""


# Spark's Kafka sink writes a micro-batch's records as fast as its tasks make them; the Java
# client's defaults (batches of at most 16 KiB, sent without waiting) cut them into many small
# requests, and a drain's output phase ran at about 0.65x the rate it does with these
# (docs/BENCHMARKS.md, "The Kafka sink's batches"). A task's end flushes without waiting for the
# linger; a record larger than a batch still goes, in a batch of its own.
SINK_BATCHING = {"kafka.batch.size": str(256 * 1024), "kafka.linger.ms": "5"}
# Spark's Kafka source reads a bounded range per task (a batch, a micro-batch). With the Java
# client's default fetch.max.wait.ms (500 ms), each task of a reconciliation's read of 1,500 new
# records spent 0.51-0.55 s in its consumer (Spark's own count: 3-4 polls), against 16-30 ms
# with 10 ms (docs/BENCHMARKS.md, "The Kafka source's fetch wait"). The likely cause: once the
# range's records are in, the consumer's next fetch, past the range's end, waits at the broker
# for records that are not coming, and the offset lookups Spark makes after a poll queue behind
# it. A fetch with records returns at once whatever the setting; only an empty one returns
# sooner, and the consumer asks again.
SOURCE_FETCH = {"kafka.fetch.max.wait.ms": "10"}
# The connection's librdkafka names and the settings fields (BOARDSTREAM_* variables) they map to.
_FIELDS = {
    "bootstrap.servers": "bootstrap_servers",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.username": "sasl_username",
    "sasl.password": "sasl_password",
    "ssl.ca.location": "ssl_ca_location",
}
# Those the Java client (Spark's Kafka options) takes under the same name; credentials go in
# its JAAS line and the CA in a truststore.
_JAVA_NAMED = ("bootstrap.servers", "security.protocol", "sasl.mechanism")
