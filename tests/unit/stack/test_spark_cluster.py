"""The local Spark cluster without starting it: its settings, the exact spark-class command lines
(each carrying its marker), when the master's JSON counts as ready, the line that says how jobs
reach the cluster, and a worker refused at once when no master answers. On hosts of their own:
the master on its address setting, a worker registering there and binding its own host's
address (SPARK_LOCAL_IP, else the route to its master), and the master's state asked of its
host."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.spark.submit import spark_home
from boardstream.stack import spark_cluster
from boardstream.stack.spark_cluster import SparkMaster, SparkWorker
from tests.fixtures import free_port

MASTER_HOST, WORKER_HOST = "10.232.2.2", "10.232.2.3"


@pytest.fixture(autouse=True)
def _no_spark_local_ip(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker binds SPARK_LOCAL_IP when the environment sets it: these tests set their own."""
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        var_dir=tmp_path,
        spark_master_port=17077,
        spark_master_ui_port=18090,
        spark_worker_ui_port=18091,
        spark_worker_cores=3,
        spark_worker_memory="1500m",
    )


def test_settings_defaults_and_env_vars(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    defaults = Settings(var_dir=tmp_path)
    assert (
        defaults.spark_master,
        defaults.spark_master_port,
        defaults.spark_master_ui_port,
        defaults.spark_worker_ui_port,
        defaults.spark_worker_cores,
        defaults.spark_worker_memory,
    ) == ("local[2]", 7077, 8090, 8091, max(os.cpu_count() or 2, 3), "2g")  # the streams: 2 + 1
    assert defaults.spark_master_ui_port != defaults.airflow_port  # both in one stack
    for name, value in {
        "SPARK_MASTER": "spark://127.0.0.1:7177",
        "SPARK_MASTER_PORT": "7177",
        "SPARK_MASTER_UI_PORT": "8190",
        "SPARK_WORKER_UI_PORT": "8191",
        "SPARK_WORKER_CORES": "1",
        "SPARK_WORKER_MEMORY": "1g",
    }.items():
        monkeypatch.setenv(f"BOARDSTREAM_{name}", value)
    read = Settings(var_dir=tmp_path)
    assert (
        read.spark_master,
        read.spark_master_port,
        read.spark_master_ui_port,
        read.spark_worker_ui_port,
        read.spark_worker_cores,
        read.spark_worker_memory,
    ) == ("spark://127.0.0.1:7177", 7177, 8190, 8191, 1, "1g")


def test_master_command_line_properties_and_addresses(settings: Settings) -> None:
    master = SparkMaster(settings)
    home = settings.var_dir / "spark-master"
    assert master.command() == [
        str(spark_home() / "bin" / "spark-class"),
        "org.apache.spark.deploy.master.Master",
        "--properties-file",
        str(home / "spark.properties"),
        "--host",
        "127.0.0.1",
        "--port",
        "17077",
        "--webui-port",
        "18090",
    ]
    assert master.process.marker == str(home / "spark.properties")
    assert master.process.pid_file == settings.var_dir / "run" / "spark-master.pid"
    assert master.log_file == settings.var_dir / "log" / "spark-master.log"
    assert master.properties() == {
        "spark.port.maxRetries": "0",
        "spark.master.rest.enabled": "false",
        "spark.deploy.maxExecutorRetries": "-1",
    }
    assert master.env() == {
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_PUBLIC_DNS": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "512m",
    }
    assert (master.address, master.ui) == ("spark://127.0.0.1:17077", "http://127.0.0.1:18090")


def test_worker_command_line_names_its_master_and_resources(settings: Settings) -> None:
    worker = SparkWorker(settings)
    home = settings.var_dir / "spark-worker"
    assert worker.command() == [
        str(spark_home() / "bin" / "spark-class"),
        "org.apache.spark.deploy.worker.Worker",
        "--properties-file",
        str(home / "spark.properties"),
        "spark://127.0.0.1:17077",
        "--host",
        "127.0.0.1",
        "--cores",
        "3",
        "--memory",
        "1500m",
        "--webui-port",
        "18091",
        "--work-dir",
        str(home / "work"),
    ]
    assert worker.process.marker == str(home / "spark.properties")
    assert worker.process.marker != SparkMaster(settings).process.marker
    assert worker.properties() == {"spark.port.maxRetries": "0"}
    assert worker.address == "http://127.0.0.1:18091"


def test_ready_only_for_this_master_and_this_worker(settings: Settings) -> None:
    master, worker = SparkMaster(settings), SparkWorker(settings)
    ours = {"webuiaddress": "http://127.0.0.1:18091", "state": "ALIVE"}
    other = {"webuiaddress": "http://127.0.0.1:28091", "state": "ALIVE"}
    assert master.ready({"url": "spark://127.0.0.1:17077", "status": "ALIVE", "workers": []})
    assert not master.ready({"url": "spark://127.0.0.1:17077", "status": "RECOVERING"})
    assert not master.ready({"url": "spark://127.0.0.1:27077", "status": "ALIVE"})
    assert worker.ready({"workers": [other, ours]})
    assert not worker.ready({"workers": [other]})
    assert not worker.ready({"workers": [{**ours, "state": "DEAD"}]})
    assert not worker.ready({"workers": []})


def test_the_up_line_says_how_jobs_reach_the_cluster(settings: Settings) -> None:
    assert SparkMaster(settings).how_jobs_reach_it() == (
        "jobs run in local[2]; to run them on this cluster: "
        "BOARDSTREAM_SPARK_MASTER=spark://127.0.0.1:17077 (its UI: http://127.0.0.1:18090)"
    )
    on_cluster = settings.model_copy(update={"spark_master": "spark://127.0.0.1:17077"})
    assert SparkMaster(on_cluster).how_jobs_reach_it() == (
        "jobs run on this cluster (BOARDSTREAM_SPARK_MASTER=spark://127.0.0.1:17077)"
    )


def test_a_worker_without_a_master_is_refused_at_once(settings: Settings) -> None:
    alone = settings.model_copy(
        update={"spark_master_port": free_port(), "spark_master_ui_port": free_port()}
    )
    worker = SparkWorker(alone)
    with pytest.raises(BoardstreamError) as refused:
        worker.start()
    assert str(refused.value) == (
        f"the Spark worker needs the master at spark://127.0.0.1:{alone.spark_master_port} (UI "
        f"http://127.0.0.1:{alone.spark_master_ui_port}), which is not running: "
        "stack up --spark-cluster starts both"
    )
    assert not worker.process.pid_file.exists() and not worker.log_file.exists()


def test_a_worker_short_of_the_streams_says_so_and_the_setting() -> None:
    assert SparkWorker(Settings(spark_worker_cores=3)).short_of_streams() is None
    assert SparkWorker(Settings(spark_worker_cores=2)).short_of_streams() == (
        "the Spark worker offers 2 cores and the live streams take 3 (join 2, sink 1): the "
        "second would be refused. Set BOARDSTREAM_SPARK_WORKER_CORES=3 (cores are task slots: "
        "more than the machine has is allowed)"
    )


def test_the_master_host_setting_and_its_env_var(monkeypatch, tmp_path: Path) -> None:
    assert Settings(var_dir=tmp_path).spark_master_host == "127.0.0.1"
    monkeypatch.setenv("BOARDSTREAM_SPARK_MASTER_HOST", MASTER_HOST)
    assert Settings(var_dir=tmp_path).spark_master_host == MASTER_HOST


def test_a_master_on_its_hosts_address_binds_and_advertises_it(settings: Settings) -> None:
    master = SparkMaster(settings.model_copy(update={"spark_master_host": MASTER_HOST}))
    assert master.arguments() == ["--host", MASTER_HOST, "--port", "17077", "--webui-port", "18090"]
    assert (master.env()["SPARK_LOCAL_IP"], master.env()["SPARK_PUBLIC_DNS"]) == (
        MASTER_HOST,
        MASTER_HOST,
    )
    assert (master.address, master.ui) == (
        f"spark://{MASTER_HOST}:17077",
        f"http://{MASTER_HOST}:18090",
    )
    assert master.ready({"url": f"spark://{MASTER_HOST}:17077", "status": "ALIVE"})
    assert not master.ready({"url": "spark://127.0.0.1:17077", "status": "ALIVE"})


def test_a_worker_registers_with_that_master_and_binds_its_own_address(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPARK_LOCAL_IP", WORKER_HOST)  # as a test host's processes have it
    worker = SparkWorker(settings.model_copy(update={"spark_master_host": MASTER_HOST}))
    assert worker.arguments()[:3] == [f"spark://{MASTER_HOST}:17077", "--host", WORKER_HOST]
    assert (worker.env()["SPARK_LOCAL_IP"], worker.env()["SPARK_PUBLIC_DNS"]) == (
        WORKER_HOST,
        WORKER_HOST,
    )
    # Ready once the master lists it under its own address, not the loopback's.
    assert worker.address == f"http://{WORKER_HOST}:18091"
    assert worker.ready({"workers": [{"webuiaddress": worker.address, "state": "ALIVE"}]})
    loopback = {"webuiaddress": "http://127.0.0.1:18091", "state": "ALIVE"}
    assert not worker.ready({"workers": [loopback]})


def test_without_spark_local_ip_a_worker_binds_the_route_to_its_master(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    routes: list[str] = []

    def route_to(master: str) -> str | None:
        routes.append(master)
        return WORKER_HOST

    monkeypatch.setattr(spark_cluster, "route_to", route_to)
    worker = SparkWorker(settings.model_copy(update={"spark_master_host": MASTER_HOST}))
    assert (worker.host, worker.host) == (WORKER_HOST, WORKER_HOST)
    assert routes == [f"spark://{MASTER_HOST}:17077"]  # asked once
    monkeypatch.setattr(spark_cluster, "route_to", lambda master: None)  # no route: loopback
    assert SparkWorker(settings).host == "127.0.0.1"


def test_the_masters_state_is_asked_of_its_host(settings, monkeypatch) -> None:
    asked: list[tuple[str, int]] = []

    def master_state(host: str, ui_port: int) -> None:
        asked.append((host, ui_port))

    monkeypatch.setattr(spark_cluster.standalone, "master_state", master_state)
    on_host = settings.model_copy(update={"spark_master_host": MASTER_HOST})
    assert spark_cluster.master_state(on_host) is None
    assert spark_cluster.master_state(settings) is None
    assert asked == [(MASTER_HOST, 18090), ("127.0.0.1", 18090)]


def test_a_worker_whose_master_on_another_host_does_not_answer_is_refused(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPARK_LOCAL_IP", WORKER_HOST)
    monkeypatch.setattr(spark_cluster.standalone, "master_state", lambda host, port: None)
    worker = SparkWorker(settings.model_copy(update={"spark_master_host": MASTER_HOST}))
    with pytest.raises(BoardstreamError) as refused:
        worker.start()
    assert str(refused.value) == (
        f"the Spark worker needs the master at spark://{MASTER_HOST}:17077 (UI "
        f"http://{MASTER_HOST}:18090), which does not answer from here: stack up --only "
        f"spark-master starts it on that host, with BOARDSTREAM_SPARK_MASTER_HOST={MASTER_HOST}"
    )
    assert not worker.process.pid_file.exists() and not worker.log_file.exists()
