"""A cluster of hosts on one machine (issue #50): every service of boardstream on a host of its
own, each started as an operator would on its machine, with ``boardstream stack up --only``.

=============  ==========================================================================
host           runs
=============  ==========================================================================
kafka-1..3     a Kafka node each (KRaft: broker and controller), topics replicated 3 times
postgres       PostgreSQL: boardstream's database (leases, register, progress, table)
hdfs           HDFS's NameNode and DataNode: the checkpoints and Spark's event logs
spark-master   the Spark standalone master
worker-1, -2   a Spark worker each: the streams' executors
driver-1, -2   where the supervision starts the streams' drivers (client mode): with Airflow,
               an edge worker each, which runs the supervising DAGs' tasks
airflow        (``Cluster(airflow=True)``) Airflow with the Edge executor: scheduler, API
               server, DAG processor, triggerer; its metadata on the cluster's PostgreSQL
=============  ==========================================================================

Every host has a var directory of its own and no ``BOARDSTREAM_*`` variable but those below
(:meth:`Hosts.environment`): what one host knows of another is an address in its settings.
The tests, in the root namespace, reach every host through the bridge as an operator's
machine would. ``down`` stops each host's services with ``stack down`` there, then removes
the hosts (killing what is left).
"""

from __future__ import annotations

import json
import logging
import secrets
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path

import sqlalchemy as sa

from boardstream.entrypoints.airflow_api import AirflowApi
from boardstream.settings import PROJECT_ROOT, Settings
from boardstream.stack.airflow import EDGE_EXECUTOR, AirflowStandalone
from boardstream.stack.hosts import DEFAULT_NETWORK, Hosts, Network
from boardstream.stack.kafka_broker import new_cluster_id
from tests.fixtures import cli_command, up_in_own_dir

logger = logging.getLogger(__name__)

KAFKA = ("kafka-1", "kafka-2", "kafka-3")
WORKERS = ("worker-1", "worker-2")
DRIVERS = ("driver-1", "driver-2")
HOSTS = (*KAFKA, "postgres", "hdfs", "spark-master", *WORKERS, *DRIVERS)
KAFKA_PORT, CONTROLLER_PORT = 9092, 9093
POSTGRES_PORT = 5432
SPARK_MASTER_PORT, SPARK_MASTER_UI_PORT, SPARK_WORKER_UI_PORT = 7077, 8080, 8081
NAMENODE_PORT, NAMENODE_HTTP_PORT = 9000, 9870
AIRFLOW_PORT = 8080
LEASE_TTL_S = 10.0  # a lost driver's lease is free within it (tests/faults/harness.py's)
WORKER_CORES = 4  # task slots: both streams fit on one worker when the other is lost
# Room for the streams twice: the applications of a driver host cut off keep their executors
# (and the memory they hold) until the host answers again, beside their successors'.
WORKER_MEMORY = "4g"
# The Airflow cluster's network: apart from the other's, so a long run may go beside the suite.
AIRFLOW_NETWORK = Network("bsa", "10.232.6.0/24")


class Cluster:
    def __init__(
        self,
        root: Path,
        airflow: bool = False,
        network: Network = DEFAULT_NETWORK,
        lease_ttl_s: float = LEASE_TTL_S,
    ) -> None:
        self.root = root
        self.airflow = airflow
        self.lease_ttl_s = lease_ttl_s
        self.hosts = Hosts([*HOSTS, *(["airflow"] if airflow else [])], root, network)
        self.kafka_cluster_id = new_cluster_id()
        self.jwt_secret = secrets.token_urlsafe(32)  # the Airflow API's, every host's

    def address(self, host: str) -> str:
        return self.hosts.address(host)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{self.address(host)}:{KAFKA_PORT}" for host in KAFKA)

    @property
    def hdfs(self) -> str:
        return f"hdfs://{self.address('hdfs')}:{NAMENODE_PORT}"

    def env(self) -> dict[str, str]:
        """The settings every host shares: where the others are."""
        return {
            "BOARDSTREAM_BOOTSTRAP_SERVERS": self.bootstrap_servers,
            "BOARDSTREAM_BROKERS": "3",
            "BOARDSTREAM_CONTROLLER_PORT": str(CONTROLLER_PORT),
            "BOARDSTREAM_KAFKA_CLUSTER_ID": self.kafka_cluster_id,
            "BOARDSTREAM_POSTGRES_HOST": self.address("postgres"),
            "BOARDSTREAM_POSTGRES_PORT": str(POSTGRES_PORT),
            "BOARDSTREAM_DATABASE_URL": (
                f"postgresql+psycopg2://boardstream@{self.address('postgres')}:{POSTGRES_PORT}"
                "/boardstream"
            ),
            "BOARDSTREAM_HDFS_HOST": self.address("hdfs"),
            "BOARDSTREAM_HDFS_NAMENODE_PORT": str(NAMENODE_PORT),
            "BOARDSTREAM_HDFS_REPLICATION": "1",
            "BOARDSTREAM_CHECKPOINT_ROOT": f"{self.hdfs}/boardstream/checkpoints",
            "BOARDSTREAM_SPARK_EVENT_LOG_DIR": f"{self.hdfs}/boardstream/spark-events",
            "BOARDSTREAM_SPARK_MASTER": (
                f"spark://{self.address('spark-master')}:{SPARK_MASTER_PORT}"
            ),
            "BOARDSTREAM_SPARK_MASTER_HOST": self.address("spark-master"),
            "BOARDSTREAM_SPARK_MASTER_PORT": str(SPARK_MASTER_PORT),
            "BOARDSTREAM_SPARK_MASTER_UI_PORT": str(SPARK_MASTER_UI_PORT),
            "BOARDSTREAM_SPARK_WORKER_UI_PORT": str(SPARK_WORKER_UI_PORT),
            "BOARDSTREAM_SPARK_WORKER_CORES": str(WORKER_CORES),
            "BOARDSTREAM_SPARK_WORKER_MEMORY": WORKER_MEMORY,
            "BOARDSTREAM_LEASE_TTL_S": str(self.lease_ttl_s),
            "BOARDSTREAM_JAR_CACHE": str(PROJECT_ROOT / "var" / "jars"),
            **(self._airflow_env() if self.airflow else {}),
        }

    def _airflow_env(self) -> dict[str, str]:
        """Where Airflow's API server is, how its edge workers are told apart from others, and
        where its metadata lives (a database of the cluster's PostgreSQL)."""
        return {
            "BOARDSTREAM_AIRFLOW_HOST": self.address("airflow"),
            "BOARDSTREAM_AIRFLOW_PORT": str(AIRFLOW_PORT),
            "BOARDSTREAM_AIRFLOW_EXECUTOR": EDGE_EXECUTOR,
            "BOARDSTREAM_AIRFLOW_JWT_SECRET": self.jwt_secret,
            "BOARDSTREAM_AIRFLOW_DATABASE_URL": (
                f"postgresql+psycopg2://boardstream@{self.address('postgres')}:{POSTGRES_PORT}"
                "/airflow"
            ),
        }

    def host_env(self, host: str) -> dict[str, str]:
        """The shared settings, and a Kafka host's own: which node it runs, on its address."""
        own = {}
        if host in KAFKA:
            own = {
                "BOARDSTREAM_KAFKA_NODE": str(KAFKA.index(host) + 1),
                "BOARDSTREAM_KAFKA_HOST": self.address(host),
            }
        if host in DRIVERS:
            own = {"BOARDSTREAM_EDGE_WORKER_HOSTNAME": host}
        env = self.hosts.environment(host, {**self.env(), **own})
        return {k: v for k, v in env.items() if not k.startswith("AIRFLOW")}  # none of ours

    def settings(self, **overrides: object) -> Settings:
        """The cluster's settings as the tests (an operator's machine) use them."""
        env = self.env()
        values: dict[str, object] = {
            "bootstrap_servers": env["BOARDSTREAM_BOOTSTRAP_SERVERS"],
            "brokers": 3,
            "database_url": env["BOARDSTREAM_DATABASE_URL"],
            "checkpoint_root": env["BOARDSTREAM_CHECKPOINT_ROOT"],
            "spark_event_log_dir": env["BOARDSTREAM_SPARK_EVENT_LOG_DIR"],
            "hdfs_host": self.address("hdfs"),
            "hdfs_replication": 1,
            "spark_master": env["BOARDSTREAM_SPARK_MASTER"],
            "lease_ttl_s": self.lease_ttl_s,
            "var_dir": self.root / "tests" / "var",
            "jar_cache": PROJECT_ROOT / "var" / "jars",
        }
        return Settings(**{**values, **overrides})

    # -- running things on a host --------------------------------------------------------------

    def run(
        self,
        host: str,
        argv: list[str],
        env: dict[str, str] | None = None,
        timeout_s: float = 300,
    ) -> str:
        """``argv`` run to its end on ``host`` (with ``env`` besides the host's): its output; an
        error names the host and says what it printed."""
        result = subprocess.run(
            self.hosts.command(host, argv),
            env={**self.host_env(host), **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        if result.returncode != 0:
            raise AssertionError(
                f"on {host}: {' '.join(argv[:6])} exited {result.returncode}:\n"
                f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
            )
        return result.stdout

    def cli(self, host: str, *args: str, timeout_s: float = 300) -> str:
        """``boardstream ARGS`` on ``host``, as an operator logged in there runs it."""
        return self.run(host, cli_command(*args), timeout_s=timeout_s)

    def python(self, host: str, code: str, env: dict[str, str], *args: str) -> str:
        """Python ``code`` (with ``args``) run on ``host`` with ``env`` besides the host's."""
        return self.run(host, [sys.executable, "-c", code, *args], env)

    # -- what the tests ask of it --------------------------------------------------------------

    def new_database(self) -> str:
        """A database of its own on the cluster's PostgreSQL, reached from the tests' namespace."""
        return self.create_database(f"db_{uuid.uuid4().hex[:8]}")

    def create_database(self, name: str) -> str:
        server = f"postgresql+psycopg2://boardstream@{self.address('postgres')}:{POSTGRES_PORT}"
        admin = sa.create_engine(f"{server}/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.execute(sa.text(f"CREATE DATABASE {name}"))
        admin.dispose()
        return f"{server}/{name}"

    def hdfs_files(self, uri: str) -> dict[str, int]:
        """The files in directory ``uri`` of the cluster's HDFS and when each was last written
        (ms), as the NameNode's WebHDFS lists them; {} when there is no such directory."""
        path = urllib.parse.urlparse(uri).path
        url = f"http://{self.address('hdfs')}:{NAMENODE_HTTP_PORT}/webhdfs/v1{path}?op=LISTSTATUS"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                listed = json.load(response)["FileStatuses"]["FileStatus"]
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return {}
            raise
        return {f["pathSuffix"]: int(f["modificationTime"]) for f in listed}

    @property
    def airflow_url(self) -> str:
        return f"http://{self.address('airflow')}:{AIRFLOW_PORT}"

    def airflow_password(self) -> str:
        """The Airflow user's password, from the Airflow host's home (an operator's secret)."""
        return AirflowStandalone(self.hosts.settings("airflow")).password()

    def airflow_api(self) -> AirflowApi:
        """The API server on the Airflow host, as its user."""
        return AirflowApi(self.airflow_url, "admin", self.airflow_password())

    def executor_hosts(self) -> set[str]:
        """The worker hosts running executors now, as their workers' web UIs list them (a dead
        worker's answers nothing)."""
        running = set()
        for host in WORKERS:
            url = f"http://{self.address(host)}:{SPARK_WORKER_UI_PORT}/json/"
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    state = json.load(response)
            except (urllib.error.URLError, OSError):
                continue
            if state.get("executors"):
                running.add(host)
        return running

    # -- up and down ---------------------------------------------------------------------------

    def up(self) -> None:
        """The hosts, then their services, each started on its host with ``stack up --only``:
        the three Kafka nodes together (a quorum forms only when two run), PostgreSQL and HDFS
        beside them; the Spark master, then its workers."""
        self.hosts.up()
        parts = {
            **{host: ["kafka"] for host in KAFKA},
            "postgres": ["postgres"],
            "hdfs": ["namenode", "datanode"],
            "spark-master": ["spark-master"],
        }
        self._start(parts)
        self._start({host: ["spark-worker"] for host in WORKERS})
        if self.airflow:
            self.create_database("airflow")
            self._start({"airflow": ["airflow"]})
            self._start({host: ["edge-worker"] for host in DRIVERS})
        logger.info("cluster up: %s", ", ".join(f"{h} {self.address(h)}" for h in HOSTS))

    def _start(self, parts: dict[str, list[str]]) -> None:
        def start(host: str) -> str:
            only = [argument for service in parts[host] for argument in ("--only", service)]
            return self.cli(host, "stack", "up", *only)

        with ThreadPoolExecutor(len(parts)) as pool:
            for line in pool.map(start, parts):
                logger.info("%s", line.strip())

    def down(self) -> None:
        """Each host's services stopped there (``stack down``, which asks the database for the
        host's drivers): the drivers' and workers' hosts first, the Kafka nodes at once (stopped
        one by one, the last would have no quorum to shut down with), PostgreSQL last; then the
        hosts removed, with whatever still runs in them."""
        try:
            first = ["airflow"] if self.airflow else []  # its supervisor would restart streams
            for host in (*first, *DRIVERS, *WORKERS, "spark-master", "hdfs"):
                self._stop(host)
            with ThreadPoolExecutor(len(KAFKA)) as pool:
                list(pool.map(self._stop, KAFKA))
            self._stop("postgres")
        finally:
            self.hosts.down()

    def _stop(self, host: str) -> None:
        result = subprocess.run(
            self.hosts.command(host, cli_command("stack", "down")),
            env=self.host_env(host),
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        if result.returncode != 0:
            logger.warning("stack down on %s: %s", host, result.stderr[-1000:])


def running(
    airflow: bool, network: Network = DEFAULT_NETWORK, **options: float
) -> AbstractContextManager[Cluster]:
    """A cluster up for the ``with`` block, then down and its files removed."""
    return up_in_own_dir(
        "bsh-cluster-", lambda root: Cluster(root, airflow=airflow, network=network, **options)
    )
