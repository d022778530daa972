"""``boardstream stack up|down|status``: the local services, started and stopped as one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from boardstream.settings import Settings
from boardstream.stack.airflow import AirflowStandalone
from boardstream.stack.kafka_broker import KafkaBroker
from boardstream.stack.postgres import Postgres
from boardstream.stack.processes import ManagedProcess
from boardstream.stack.spark_cluster import SparkMaster, SparkWorker


class Service(Protocol):
    name: str
    process: ManagedProcess

    @property
    def address(self) -> str: ...

    def start(self) -> int: ...


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
        self.kafka = KafkaBroker(settings)
        self.postgres = Postgres(settings)
        self.spark_master = SparkMaster(settings)
        self.spark_worker = SparkWorker(settings)
        self.airflow = AirflowStandalone(settings)
        # Airflow last: its spark_default connection may name the cluster started before it.
        self.services: tuple[Service, ...] = (
            self.kafka,
            self.postgres,
            self.spark_master,
            self.spark_worker,
            self.airflow,
        )

    def up(
        self, postgres: bool = False, airflow: bool = False, spark_cluster: bool = False
    ) -> list[str]:
        """Start what is not running yet; report what already was. Returns one line each, and
        with the Spark cluster, a last one on how jobs reach it."""
        wanted: list[Service] = [self.kafka]
        wanted += [self.postgres] if postgres else []
        wanted += [self.spark_master, self.spark_worker] if spark_cluster else []
        wanted += [self.airflow] if airflow else []
        report = []
        for service in wanted:
            pid = service.process.pid()
            if pid is not None:
                report.append(f"{service.name} already running (pid {pid}) on {service.address}")
                continue
            pid = service.start()
            report.append(f"{service.name} started (pid {pid}) on {service.address}")
        if spark_cluster:
            report.append(self.spark_master.how_jobs_reach_it())
        return report

    def down(self) -> list[str]:
        """Stop only the processes this stack's pid files name, in reverse start order (the
        Spark worker before its master)."""
        report = []
        for service in reversed(self.services):
            if service.process.stop():
                report.append(f"{service.name} stopped")
        return report or ["nothing was running"]

    def status(self) -> list[ServiceStatus]:
        return [
            ServiceStatus(service.name, service.process.pid(), service.address)
            for service in self.services
        ]
