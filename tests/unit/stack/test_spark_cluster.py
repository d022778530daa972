"""The local Spark cluster without starting it: its settings, the exact spark-class command lines
(each carrying its marker), when the master's JSON counts as ready, the line that says how jobs
reach the cluster, and a worker refused at once when no master answers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.spark.submit import spark_home
from boardstream.stack.spark_cluster import SparkMaster, SparkWorker
from tests.fixtures import free_port


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
