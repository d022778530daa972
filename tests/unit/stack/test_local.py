"""``boardstream stack up|down|status`` over fake services: up starts only what was asked and is
not running yet (Kafka always, a single broker or a cluster; in order Kafka, PostgreSQL, HDFS's
NameNode and DataNode, the Spark master and worker, Airflow, an edge worker) and, with the Spark
cluster, ends saying how jobs reach it; down stops in reverse order (the worker before its
master, the DataNode before its NameNode) and reports only what it stopped;
status is one aligned line per service (a cluster's extra brokers, an edge worker, when asked
for or running).
A port held by another process is refused before anything starts, whichever service needs it."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from boardstream import supervision
from boardstream.errors import BoardstreamError, InvalidOptionError
from boardstream.settings import Settings
from boardstream.stack import local
from boardstream.stack.airflow import EDGE_EXECUTOR
from boardstream.stack.kafka_cluster import KafkaCluster
from boardstream.stack.local import LocalStack, ServiceStatus
from boardstream.stack.ports import ListenPort, listeners
from tests.fixtures import cluster_settings, free_port, isolated_settings


class Process:
    def __init__(self, pid: int | None) -> None:
        self.running = pid

    def pid(self) -> int | None:
        return self.running

    def stop(self) -> bool:
        was_running = self.running is not None
        self.running = None
        return was_running

    def signal(self) -> None:
        self.signalled = True


class Service:
    def __init__(self, name: str, pid: int | None, log: list[str]) -> None:
        self.name = name
        self.process = Process(pid)
        self.log = log

    @property
    def address(self) -> str:
        return f"localhost:{len(self.name)}"

    def start(self) -> int:
        self.log.append(f"start {self.name}")
        self.process.running = 100 + len(self.log)
        return self.process.running

    def how_jobs_reach_it(self) -> str:
        return f"jobs reach {self.name}"

    def listen_ports(self) -> list[ListenPort]:
        return []


@pytest.fixture
def log() -> list[str]:
    return []


def stack(
    tmp_path: Path, log: list[str], brokers: int = 1, executor: str | None = None, **pids: int
) -> LocalStack:
    made = LocalStack(Settings(var_dir=tmp_path, brokers=brokers, airflow_executor=executor))
    names = (
        "kafka",
        "kafka_2",
        "kafka_3",
        "postgres",
        "namenode",
        "datanode",
        "spark_master",
        "spark_worker",
        "airflow",
        "edge_worker",
    )
    for name in names:
        setattr(made, name, Service(name.replace("_", "-"), pids.get(name), log))
    made.more_brokers = (made.kafka_2, made.kafka_3)
    made.services = tuple(getattr(made, name) for name in names)
    return made


class Cluster:
    """Stands in for KafkaCluster: records its size and reports its nodes."""

    def __init__(self, settings: Settings, size: int) -> None:
        self.size = size
        self.brokers: list[Service] = []

    def up(self) -> list[str]:
        return [f"{self.size} brokers up", "bootstrap servers: a,b,c"]

    def ports_to_take(self) -> list[ListenPort]:
        return []


def test_the_stacks_services_in_start_order(tmp_path: Path) -> None:
    real = LocalStack(Settings(var_dir=tmp_path, airflow_port=8181))
    assert [s.name for s in real.services] == [
        "kafka",
        "kafka-2",
        "kafka-3",
        "postgres",
        "namenode",
        "datanode",
        "spark-master",
        "spark-worker",
        "airflow",
        "edge-worker",
    ]
    assert real.services == (
        real.kafka,
        *real.more_brokers,
        real.postgres,
        real.namenode,
        real.datanode,
        real.spark_master,
        real.spark_worker,
        real.airflow,
        real.edge_worker,
    )
    assert real.airflow.address == "http://localhost:8181"
    assert [b.address for b in real.more_brokers] == ["localhost:9094", "localhost:9096"]


def test_up_starts_kafka_alone_unless_asked(tmp_path, log) -> None:
    assert stack(tmp_path, log).up() == ["kafka started (pid 101) on localhost:5"]
    assert log == ["start kafka"]


def test_up_only_starts_the_services_named_and_not_the_broker(tmp_path, log) -> None:
    """One host's part of a cluster: its worker, or its broker, and nothing else."""
    lines = stack(tmp_path, log, spark_worker=7).up(only=["spark-worker", "postgres"])
    assert lines == [
        "spark-worker already running (pid 7) on localhost:12",
        "postgres started (pid 101) on localhost:8",
    ]
    assert log == ["start postgres"]
    assert stack(tmp_path, log).up(only=["kafka-2"]) == ["kafka-2 started (pid 102) on localhost:7"]


def test_up_only_refuses_a_service_it_does_not_know_naming_those_it_does(tmp_path, log) -> None:
    with pytest.raises(InvalidOptionError, match="no service 'hdfs'; the services are kafka, "):
        stack(tmp_path, log).up(only=["postgres", "hdfs"])
    assert log == []


def test_up_starts_what_was_asked_and_reports_what_was_running(tmp_path, log) -> None:
    lines = stack(tmp_path, log, kafka=42).up(postgres=True, airflow=True)
    assert lines == [
        "kafka already running (pid 42) on localhost:5",
        "postgres started (pid 101) on localhost:8",
        "airflow started (pid 102) on localhost:7",
    ]
    assert log == ["start postgres", "start airflow"]


def test_the_spark_cluster_starts_before_airflow_and_says_how_to_reach_it(tmp_path, log) -> None:
    lines = stack(tmp_path, log, spark_worker=7).up(airflow=True, spark_cluster=True)
    assert lines == [
        "kafka started (pid 101) on localhost:5",
        "spark-master started (pid 102) on localhost:12",
        "spark-worker already running (pid 7) on localhost:12",
        "airflow started (pid 103) on localhost:7",
        "jobs reach spark-master",
    ]
    assert log == ["start kafka", "start spark-master", "start airflow"]


def test_hdfs_starts_after_postgres_namenode_first(tmp_path, log) -> None:
    lines = stack(tmp_path, log, namenode=9).up(postgres=True, spark_cluster=True, hdfs=True)
    assert lines == [
        "kafka started (pid 101) on localhost:5",
        "postgres started (pid 102) on localhost:8",
        "namenode already running (pid 9) on localhost:8",
        "datanode started (pid 103) on localhost:8",
        "spark-master started (pid 104) on localhost:12",
        "spark-worker started (pid 105) on localhost:12",
        "jobs reach spark-master",
    ]
    assert log == [
        "start kafka",
        "start postgres",
        "start datanode",
        "start spark-master",
        "start spark-worker",
    ]


def test_down_stops_in_reverse_order_only_what_runs(tmp_path, log) -> None:
    stopped: list[str] = []
    made = stack(tmp_path, log, kafka=1, spark_master=2, spark_worker=3, airflow=4)
    for service in made.services:
        stop = service.process.stop
        service.process.stop = lambda stop=stop, name=service.name: stopped.append(name) or stop()
    assert made.down() == [
        "airflow stopped",
        "spark-worker stopped",
        "spark-master stopped",
        "kafka stopped",
    ]
    assert stopped == [
        "edge-worker",
        "airflow",
        "spark-worker",
        "spark-master",
        "datanode",
        "namenode",
        "postgres",
        "kafka-3",
        "kafka-2",
        "kafka",
    ]
    assert made.down() == ["nothing was running"]


def test_down_stops_the_edge_worker_and_airflow_before_the_streams(
    tmp_path, log, monkeypatch
) -> None:
    """Either would start a stream again (the supervise task), so both stop before the halt."""
    made = stack(tmp_path, log, kafka=1, airflow=4, edge_worker=5)
    monkeypatch.setattr(
        supervision,
        "halt",
        lambda settings: [f"join stopped ({made.edge_worker.process.pid()}, "
                          f"{made.airflow.process.pid()} by then)"],
    )  # fmt: skip
    assert made.down() == [
        "edge-worker stopped",
        "airflow stopped",
        "join stopped (None, None by then)",
        "kafka stopped",
    ]


def test_down_with_the_database_away_says_so_and_stops_the_services(
    tmp_path, log, monkeypatch, caplog
) -> None:
    """On a cluster's host whose database was stopped first: no driver can be looked for."""
    made = stack(tmp_path, log, kafka=1)

    def unreachable(settings):
        raise OperationalError("SELECT", {}, Exception("connection refused"))

    monkeypatch.setattr(supervision, "halt", unreachable)
    assert made.down() == ["kafka stopped"]
    assert "stream drivers not looked for: the database" in caplog.text
    assert "did not answer: connection refused" in caplog.text


def test_up_with_three_brokers_starts_them_as_one_cluster_first(tmp_path, log, monkeypatch) -> None:
    monkeypatch.setattr(local, "KafkaCluster", Cluster)
    lines = stack(tmp_path, log).up(postgres=True, brokers=3)
    assert lines == [
        "3 brokers up",
        "bootstrap servers: a,b,c",
        "postgres started (pid 101) on localhost:8",
    ]
    assert log == ["start postgres"]  # the nodes are the cluster's to start, not one by one


def test_the_settings_brokers_are_the_default(tmp_path, log, monkeypatch) -> None:
    monkeypatch.setattr(local, "KafkaCluster", Cluster)
    assert stack(tmp_path, log, brokers=3).up() == ["3 brokers up", "bootstrap servers: a,b,c"]
    assert stack(tmp_path, log, brokers=3).up(brokers=1) == [
        "kafka started (pid 101) on localhost:5"
    ]


def test_down_stops_a_clusters_nodes_whatever_the_settings_say(tmp_path, log) -> None:
    made = stack(tmp_path, log, kafka=1, kafka_2=2, kafka_3=3)
    assert made.down() == ["kafka-3 stopped", "kafka-2 stopped", "kafka stopped"]
    # All told before any is waited for (the last alone would have no quorum to stop with).
    assert all(node.process.signalled for node in (made.kafka, *made.more_brokers))
    single = stack(tmp_path, log, kafka=1)
    assert single.down() == ["kafka stopped"]
    assert not hasattr(single.kafka.process, "signalled"), "a single broker stops as before"


def test_status_lists_the_extra_brokers_when_asked_for_or_running(tmp_path, log) -> None:
    def kafkas(made: LocalStack) -> list[str]:
        return [s.line() for s in made.status() if s.name.startswith("kafka")]

    assert kafkas(stack(tmp_path, log, kafka=1)) == [
        "kafka        running (pid 1)        localhost:5",
    ]
    assert kafkas(stack(tmp_path, log, kafka_3=3)) == [
        "kafka        stopped                localhost:5",
        "kafka-3      running (pid 3)        localhost:7",
    ]
    assert kafkas(stack(tmp_path, log, brokers=3)) == [
        "kafka        stopped                localhost:5",
        "kafka-2      stopped                localhost:7",
        "kafka-3      stopped                localhost:7",
    ]


def test_status_lists_the_edge_worker_when_asked_for_or_running(tmp_path, log) -> None:
    def edge_worker(made: LocalStack) -> list[str]:
        return [s.line() for s in made.status() if s.name == "edge-worker"]

    assert edge_worker(stack(tmp_path, log)) == []
    assert edge_worker(stack(tmp_path, log, executor=EDGE_EXECUTOR)) == [
        "edge-worker  stopped                localhost:11",
    ]
    assert edge_worker(stack(tmp_path, log, edge_worker=5)) == [
        "edge-worker  running (pid 5)        localhost:11",
    ]


def test_status_is_a_line_per_service(tmp_path, log) -> None:
    statuses = stack(tmp_path, log, postgres=4321).status()
    assert statuses == [
        ServiceStatus("kafka", None, "localhost:5"),
        ServiceStatus("postgres", 4321, "localhost:8"),
        ServiceStatus("namenode", None, "localhost:8"),
        ServiceStatus("datanode", None, "localhost:8"),
        ServiceStatus("spark-master", None, "localhost:12"),
        ServiceStatus("spark-worker", None, "localhost:12"),
        ServiceStatus("airflow", None, "localhost:7"),
    ]
    assert [s.line() for s in statuses] == [
        "kafka        stopped                localhost:5",
        "postgres     running (pid 4321)     localhost:8",
        "namenode     stopped                localhost:8",
        "datanode     stopped                localhost:8",
        "spark-master stopped                localhost:12",
        "spark-worker stopped                localhost:12",
        "airflow      stopped                localhost:7",
    ]


def real_stack_that_starts_nothing(settings: Settings, monkeypatch, started: list[str]):
    """The real services (their ports and pid files), each start only recorded: a refusal that
    came too late shows as a start, and starts no real service."""
    made = LocalStack(settings)
    for service in made.services:
        monkeypatch.setattr(service, "start", lambda name=service.name: started.append(name) or 1)
    monkeypatch.setattr(KafkaCluster, "up", lambda self: started.append("cluster") or [])
    return made


@pytest.mark.parametrize(
    ("setting", "what"),
    [
        ("controller_port", "kafka's controller"),
        ("postgres_port", "postgres's server"),
        ("spark_master_ui_port", "spark-master's web UI"),
        ("spark_worker_ui_port", "spark-worker's web UI"),
        ("hdfs_namenode_port", "namenode's RPC"),
        ("hdfs_namenode_http_port", "namenode's web UI"),
        ("hdfs_datanode_port", "datanode's data transfer"),
        ("hdfs_datanode_http_port", "datanode's web UI"),
        ("hdfs_datanode_ipc_port", "datanode's IPC"),
        ("airflow_port", "airflow's api"),
    ],
)
def test_up_refuses_a_held_port_before_starting_anything(
    tmp_path, monkeypatch, setting, what
) -> None:
    started: list[str] = []
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        settings = isolated_settings(tmp_path, **{setting: port})
        made = real_stack_that_starts_nothing(settings, monkeypatch, started)
        with pytest.raises(BoardstreamError) as refused:
            made.up(postgres=True, airflow=True, spark_cluster=True, hdfs=True)
    assert str(refused.value).startswith(f"port {port} ({what}) is held by pid {os.getpid()} (")
    assert str(refused.value).endswith(f"; stop it or set BOARDSTREAM_{setting.upper()}")
    assert started == []


def test_up_refuses_a_held_port_of_a_clusters_node_before_starting_anything(
    tmp_path, monkeypatch
) -> None:
    started: list[str] = []
    settings = cluster_settings(tmp_path)
    port = settings.controller_port + 4  # kafka-3's controller
    with socket.socket() as held:
        held.bind(("127.0.0.1", port))
        held.listen()
        made = real_stack_that_starts_nothing(settings, monkeypatch, started)
        with pytest.raises(BoardstreamError) as refused:
            made.up(postgres=True)
    assert str(refused.value).startswith(
        f"port {port} (kafka-3's controller) is held by pid {os.getpid()} ("
    )
    assert str(refused.value).endswith(
        "; stop it or set BOARDSTREAM_CONTROLLER_PORT (node n takes its port + 2(n-1))"
    )
    assert started == []


def test_a_service_running_under_our_pid_file_is_not_refused_its_port(
    tmp_path, monkeypatch
) -> None:
    """Airflow's port held by our own Airflow (a process with its marker, listening there): it
    is reported as running, not refused."""
    started: list[str] = []
    settings = isolated_settings(tmp_path, airflow_port=free_port())
    made = real_stack_that_starts_nothing(settings, monkeypatch, started)
    code = (
        "import socket, time\ns = socket.socket()\n"
        f"s.bind(('127.0.0.1', {settings.airflow_port}))\ns.listen()\ntime.sleep(300)"
    )
    ours = made.airflow.process.start(
        [sys.executable, "-c", code, made.airflow.process.marker], made.airflow.log_file
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (
            made.airflow.process.pid() != ours.pid or settings.airflow_port not in listeners()
        ):
            time.sleep(0.05)
        lines = made.up(airflow=True)
        assert lines[-1] == f"airflow already running (pid {ours.pid}) on {made.airflow.address}"
        assert started == ["kafka"]
    finally:
        made.airflow.process.stop_started(ours, timeout_s=5)


def spread_stack(tmp_path: Path, **overrides: object) -> LocalStack:
    """The stack of the host running node 2 of a cluster spread over three hosts."""
    return LocalStack(
        isolated_settings(
            tmp_path,
            **{
                "bootstrap_servers": "127.0.0.2:19092,127.0.0.3:19092,127.0.0.4:19092",
                "controller_port": 19093,
                "brokers": 3,
                "kafka_node": 2,
                "kafka_cluster_id": "MkU3OEVBNTcwNTJENDM2Qg",
                **overrides,
            },
        )
    )


def test_a_host_of_a_spread_cluster_has_its_node_as_kafka_and_no_other(tmp_path) -> None:
    made = spread_stack(tmp_path)
    assert made.more_brokers == ()
    assert [s.name for s in made.services][:2] == ["kafka", "postgres"]
    assert (made.kafka.node.node_id, made.kafka.address) == (2, "127.0.0.3:19092")
    assert made.status()[0].line() == "kafka        stopped                127.0.0.3:19092"


def test_up_starts_a_spread_clusters_node_alone_and_says_how_to_reach_the_cluster(
    tmp_path, monkeypatch
) -> None:
    made = spread_stack(tmp_path)
    calls: list[str] = []
    monkeypatch.setattr(made.kafka, "check_host", lambda: calls.append("check"))
    monkeypatch.setattr(made.kafka, "start", lambda: calls.append("start") or 77)
    monkeypatch.setattr(local, "KafkaCluster", None)  # never a cluster on this host
    reach = (
        "kafka is node 2 of 3 of cluster MkU3OEVBNTcwNTJENDM2Qg; other commands reach the "
        "cluster, and create topics with 3 replicas, with BOARDSTREAM_BOOTSTRAP_SERVERS="
        "127.0.0.2:19092,127.0.0.3:19092,127.0.0.4:19092 BOARDSTREAM_BROKERS=3"
    )
    assert made.up(only=["kafka"]) == ["kafka started (pid 77) on 127.0.0.3:19092", reach]
    assert made.up() == ["kafka started (pid 77) on 127.0.0.3:19092", reach]
    assert calls == ["check", "start"] * 2


def test_a_spread_clusters_host_refuses_brokers_and_a_foreign_address_first(
    tmp_path, monkeypatch
) -> None:
    started: list[str] = []
    made = real_stack_that_starts_nothing(spread_stack(tmp_path).settings, monkeypatch, started)
    with pytest.raises(InvalidOptionError) as refused:
        made.up(brokers=3)
    assert refused.value.options == ("brokers",)
    assert str(refused.value) == (
        "brokers starts every node of a cluster on this host, but BOARDSTREAM_KAFKA_NODE=2 says "
        "this host runs that node of a cluster spread over hosts, which `up` starts alone"
    )
    elsewhere = spread_stack(
        tmp_path, bootstrap_servers="127.0.0.2:19092,203.0.113.7:19092,127.0.0.4:19092"
    ).settings
    made = real_stack_that_starts_nothing(elsewhere, monkeypatch, started)
    with pytest.raises(BoardstreamError, match="an address this host does not have"):
        made.up(only=["postgres", "kafka"])
    assert started == []


def test_up_and_status_say_which_database_the_platform_uses(tmp_path) -> None:
    sqlite = isolated_settings(tmp_path)
    assert LocalStack(sqlite).database_line() == (
        f"the platform's database: sqlite:///{tmp_path}/boardstream.db "
        "(BOARDSTREAM_DATABASE_URL unset)"
    )
    named = isolated_settings(tmp_path, database_url="postgresql+psycopg2://u:pw@db:5432/bs")
    assert LocalStack(named).database_line() == (
        "the platform's database: postgresql+psycopg2://u:***@db:5432/bs (BOARDSTREAM_DATABASE_URL)"
    )
