"""``boardstream stack up|down|status``: the local services, started and stopped as one."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.exc import SQLAlchemyError

from boardstream.database import driver_said, shown
from boardstream.errors import InvalidOptionError
from boardstream.settings import CLUSTER_SIZES, Settings
from boardstream.stack.airflow import AirflowStandalone, uses_edge_executor
from boardstream.stack.edge_worker import EdgeWorker
from boardstream.stack.hdfs import DataNode, NameNode
from boardstream.stack.kafka_broker import KafkaBroker
from boardstream.stack.kafka_cluster import KafkaCluster
from boardstream.stack.ports import ListenPort, env_var, refuse_held
from boardstream.stack.postgres import Postgres
from boardstream.stack.processes import ManagedProcess
from boardstream.stack.spark_cluster import SparkMaster, SparkWorker

logger = logging.getLogger(__name__)


class Service(Protocol):
    name: str
    process: ManagedProcess

    @property
    def address(self) -> str: ...

    def start(self) -> int: ...

    def listen_ports(self) -> list[ListenPort]: ...


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    pid: int | None
    address: str

    def line(self) -> str:
        state = f"running (pid {self.pid})" if self.pid else "stopped"
        return f"{self.name:<12} {state:<22} {self.address}"


class LocalStack:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # This host's broker: the single broker, or its node of a cluster spread over hosts.
        self.kafka = KafkaBroker(settings)
        # The nodes a cluster on this host adds (kafka-2, kafka-3): listed by status when the
        # settings ask for them or they run, stopped by down whenever they run. None where this
        # host runs one node of a spread cluster: the others are other hosts'.
        self.more_brokers: tuple[Service, ...] = (
            ()
            if self.kafka.layout.spread
            else tuple(KafkaCluster(settings, max(CLUSTER_SIZES)).brokers[1:])
        )
        self.postgres = Postgres(settings)
        self.namenode = NameNode(settings)
        self.datanode = DataNode(settings)
        self.spark_master = SparkMaster(settings)
        self.spark_worker = SparkWorker(settings)
        self.airflow = AirflowStandalone(settings)
        # Another host's Airflow's worker (up --only edge-worker): listed by status when the
        # settings name the Edge executor or it runs.
        self.edge_worker = EdgeWorker(settings)
        # Storage before the jobs that write to it (HDFS's DataNode after its NameNode); Airflow
        # last (its spark_default connection may name the cluster started before it), then the
        # worker of its tasks.
        self.services: tuple[Service, ...] = (
            self.kafka,
            *self.more_brokers,
            self.postgres,
            self.namenode,
            self.datanode,
            self.spark_master,
            self.spark_worker,
            self.airflow,
            self.edge_worker,
        )

    def up(
        self,
        postgres: bool = False,
        airflow: bool = False,
        spark_cluster: bool = False,
        brokers: int | None = None,
        hdfs: bool = False,
        only: Sequence[str] = (),
    ) -> list[str]:
        """Start what is not running yet; report what already was. Returns one line each (a
        Kafka cluster's ends with its bootstrap servers), and with the Spark cluster, a last
        one on how jobs reach it. ``brokers``: 1 or 3, by default the settings'. ``only``: the
        services named and nothing else, as one host of a cluster runs its part. With
        ``kafka_node`` set, ``kafka`` is this host's node of a cluster spread over hosts, started
        alone (``brokers`` is refused) and ready once every host's node has joined. A port held
        by another process, or a node's address this host lacks, is refused before anything
        starts (see ports.py)."""
        spread = self.settings.kafka_node is not None
        if spread and brokers is not None:
            raise InvalidOptionError(
                f"brokers starts every node of a cluster on this host, but "
                f"BOARDSTREAM_KAFKA_NODE={self.settings.kafka_node} says this host runs that "
                "node of a cluster spread over hosts, which `up` starts alone",
                "brokers",
            )
        size = brokers or self.settings.brokers
        cluster = KafkaCluster(self.settings, size) if size > 1 and not (only or spread) else None
        wanted: list[Service] = [] if cluster or only else [self.kafka]
        wanted += [self.postgres] if postgres else []
        wanted += [self.namenode, self.datanode] if hdfs else []
        wanted += [self.spark_master, self.spark_worker] if spark_cluster else []
        wanted += [self.airflow] if airflow else []
        wanted += [self.service(name) for name in only]
        starting = [service for service in wanted if service.process.pid() is None]
        if spread and self.kafka in starting:
            self.kafka.check_host()
        refuse_held(
            [
                *(cluster.ports_to_take() if cluster else []),
                *(port for service in starting for port in service.listen_ports()),
            ]
        )
        # A cluster's nodes start together (see kafka_cluster.py); a single broker as any service.
        report = cluster.up() if cluster else []
        for service in wanted:
            pid = service.process.pid()
            if pid is not None:
                report.append(f"{service.name} already running (pid {pid}) on {service.address}")
                continue
            pid = service.start()
            report.append(f"{service.name} started (pid {pid}) on {service.address}")
        if spread and self.kafka in wanted:
            report.append(self.kafka.how_clients_reach_it())
        if spark_cluster:
            report.append(self.spark_master.how_jobs_reach_it())
        return report

    def service(self, name: str) -> Service:
        """The service called ``name`` (as ``status`` lists it)."""
        for service in self.services:
            if service.name == name:
                return service
        names = ", ".join(service.name for service in self.services)
        raise InvalidOptionError(f"no service {name!r}; the services are {names}", "only")

    def down(self) -> list[str]:
        """Stop only the processes this stack's pid files name, in reverse start order (the
        Spark worker before its master), and the live streams' drivers: after Airflow and its
        edge worker, whose supervisor would restart them, and before the services they need to
        stop cleanly (HDFS's DataNode before its NameNode)."""

        running = [service for service in reversed(self.services) if service.process.pid()]
        orchestration = (self.edge_worker, self.airflow)
        for service in orchestration:
            service.process.stop()
        streams = self._halt_streams()
        if any(broker in running for broker in self.more_brokers):
            # A cluster's nodes are told at once: stopped one by one, the last would be left
            # without a quorum to shut down with and wait out the stop timeout (30 s).
            for broker in (self.kafka, *self.more_brokers):
                broker.process.signal()
        for service in reversed(self.services):
            if service not in orchestration:
                service.process.stop()
        lines = [f"{service.name} stopped" for service in running]
        after_airflow = sum(1 for service in orchestration if service in running)
        lines[after_airflow:after_airflow] = streams  # in the order they were stopped
        return lines or ["nothing was running"]

    def _halt_streams(self) -> list[str]:
        """This host's stream drivers stopped (``supervision.halt``); with the database out of
        reach (stopped before, on its own host) none can be asked or found: said, and the
        services are stopped all the same."""
        from boardstream import supervision

        try:
            return supervision.halt(self.settings)
        except SQLAlchemyError as error:
            logger.warning(
                "stream drivers not looked for: the database (%s) did not answer: %s",
                shown(self.settings.database),
                driver_said(error),
            )
            return []

    def database_line(self) -> str:
        """Which database the platform's commands use, said where the stack is started: the
        local PostgreSQL runs beside SQLite until ``BOARDSTREAM_DATABASE_URL`` names it."""
        env = env_var("database_url")
        if self.settings.database_url:
            return f"the platform's database: {shown(self.settings.database)} ({env})"
        line = f"the platform's database: {self.settings.database} ({env} unset)"
        if self.postgres.process.pid() is not None:
            line += (
                f"; the local PostgreSQL is not used by it: to use it, export "
                f"{env}={self.postgres.url}"
            )
        return line

    def status(self) -> list[ServiceStatus]:
        statuses = [
            ServiceStatus(service.name, service.process.pid(), service.address)
            for service in self.services
        ]
        unasked = {s.name for s in self.more_brokers} if self.settings.brokers == 1 else set()
        if not uses_edge_executor(self.settings):
            unasked.add(self.edge_worker.name)
        return [s for s in statuses if s.pid or s.name not in unasked]
