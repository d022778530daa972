"""``boardstream stack up|down|status`` over fake services: up starts only what was asked and is
not running yet (Kafka always; in order Kafka, PostgreSQL, the Spark master and worker,
Airflow) and, with the Spark cluster, ends saying how jobs reach it; down stops in reverse
order (the worker before its master) and reports only what it stopped; status is one aligned
line per service."""

from __future__ import annotations

from pathlib import Path

import pytest

from boardstream.settings import Settings
from boardstream.stack.local import LocalStack, ServiceStatus


class Process:
    def __init__(self, pid: int | None) -> None:
        self.running = pid

    def pid(self) -> int | None:
        return self.running

    def stop(self) -> bool:
        was_running = self.running is not None
        self.running = None
        return was_running


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


@pytest.fixture
def log() -> list[str]:
    return []


def stack(tmp_path: Path, log: list[str], **pids: int) -> LocalStack:
    made = LocalStack(Settings(var_dir=tmp_path))
    names = ("kafka", "postgres", "spark_master", "spark_worker", "airflow")
    for name in names:
        setattr(made, name, Service(name.replace("_", "-"), pids.get(name), log))
    made.services = tuple(getattr(made, name) for name in names)
    return made


def test_the_stacks_services_in_start_order(tmp_path: Path) -> None:
    real = LocalStack(Settings(var_dir=tmp_path, airflow_port=8181))
    assert [s.name for s in real.services] == [
        "kafka",
        "postgres",
        "spark-master",
        "spark-worker",
        "airflow",
    ]
    assert real.services == (
        real.kafka,
        real.postgres,
        real.spark_master,
        real.spark_worker,
        real.airflow,
    )
    assert real.airflow.address == "http://localhost:8181"


def test_up_starts_kafka_alone_unless_asked(tmp_path, log) -> None:
    assert stack(tmp_path, log).up() == ["kafka started (pid 101) on localhost:5"]
    assert log == ["start kafka"]


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
    assert stopped == ["airflow", "spark-worker", "spark-master", "postgres", "kafka"]
    assert made.down() == ["nothing was running"]


def test_status_is_a_line_per_service(tmp_path, log) -> None:
    statuses = stack(tmp_path, log, postgres=4321).status()
    assert statuses == [
        ServiceStatus("kafka", None, "localhost:5"),
        ServiceStatus("postgres", 4321, "localhost:8"),
        ServiceStatus("spark-master", None, "localhost:12"),
        ServiceStatus("spark-worker", None, "localhost:12"),
        ServiceStatus("airflow", None, "localhost:7"),
    ]
    assert [s.line() for s in statuses] == [
        "kafka        stopped                localhost:5",
        "postgres     running (pid 4321)     localhost:8",
        "spark-master stopped                localhost:12",
        "spark-worker stopped                localhost:12",
        "airflow      stopped                localhost:7",
    ]
