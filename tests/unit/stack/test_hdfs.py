"""The local HDFS without starting it: its settings, the configuration both daemons read (every
port the settings'), the exact java command lines (each carrying its marker), when the
NameNode's JMX counts as ready, a name directory formatted only while it holds no file system,
and a DataNode refused at once when no NameNode answers."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.stack import hdfs
from boardstream.stack.hdfs import DataNode, NameNode
from tests.fixtures import free_port

PORTS = {
    "hdfs_namenode_port": 39100,
    "hdfs_namenode_http_port": 39101,
    "hdfs_datanode_port": 39102,
    "hdfs_datanode_http_port": 39103,
    "hdfs_datanode_ipc_port": 39104,
}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    jars = tmp_path / "jars" / "hdfs"
    jars.mkdir(parents=True)
    for name in ("hadoop-common.jar", "hadoop-hdfs.jar"):
        (jars / name).write_bytes(b"")
    return Settings(var_dir=tmp_path / "var", jar_cache=tmp_path / "jars", **PORTS)


def test_settings_defaults_and_env_vars(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    defaults = Settings(var_dir=tmp_path)
    assert (
        defaults.hdfs_host,
        defaults.hdfs_namenode_port,
        defaults.hdfs_namenode_http_port,
        defaults.hdfs_datanode_port,
        defaults.hdfs_datanode_http_port,
        defaults.hdfs_datanode_ipc_port,
    ) == ("127.0.0.1", 9000, 9870, 9866, 9864, 9867)
    assert defaults.hdfs_uri == "hdfs://127.0.0.1:9000"
    monkeypatch.setenv("BOARDSTREAM_HDFS_HOST", "localhost")
    monkeypatch.setenv("BOARDSTREAM_HDFS_NAMENODE_PORT", "9100")
    assert Settings(var_dir=tmp_path).hdfs_uri == "hdfs://localhost:9100"


def site(path: Path) -> dict[str, str]:
    root = ET.parse(path).getroot()
    return {p.findtext("name"): p.findtext("value") for p in root.iter("property")}


def test_both_daemons_read_one_configuration_every_port_the_settings(settings: Settings) -> None:
    namenode, datanode = NameNode(settings), DataNode(settings)
    home = settings.var_dir / "hdfs"
    assert namenode.conf_dir == datanode.conf_dir == home / "conf"
    namenode.configure()
    assert site(home / "conf" / "core-site.xml") == {
        "fs.defaultFS": "hdfs://127.0.0.1:39100",
        "hadoop.tmp.dir": str(home / "tmp"),
    }
    assert site(home / "conf" / "hdfs-site.xml") == {
        "dfs.namenode.name.dir": str(home / "name"),
        "dfs.datanode.data.dir": str(home / "data"),
        "dfs.replication": "1",
        "dfs.namenode.safemode.extension": "0",
        "dfs.namenode.rpc-address": "127.0.0.1:39100",
        "dfs.namenode.http-address": "127.0.0.1:39101",
        "dfs.datanode.address": "127.0.0.1:39102",
        "dfs.datanode.http.address": "127.0.0.1:39103",
        "dfs.datanode.ipc.address": "127.0.0.1:39104",
    }
    assert (home / "conf" / "log4j.properties").read_text().startswith("log4j.rootLogger=INFO")
    listened = [port.port for daemon in (namenode, datanode) for port in daemon.listen_ports()]
    assert sorted(listened) == sorted(PORTS.values())


def test_command_lines_carry_the_configuration_first_and_their_marker(
    settings: Settings, tmp_path: Path
) -> None:
    java = shutil.which("java")
    home, log_dir = settings.var_dir / "hdfs", settings.var_dir / "log"
    classpath = ":".join(
        [
            str(home / "conf"),
            str(tmp_path / "jars" / "hdfs" / "hadoop-common.jar"),
            str(tmp_path / "jars" / "hdfs" / "hadoop-hdfs.jar"),
        ]
    )
    for daemon, main_class in (
        (NameNode(settings), "org.apache.hadoop.hdfs.server.namenode.NameNode"),
        (DataNode(settings), "org.apache.hadoop.hdfs.server.datanode.DataNode"),
    ):
        marker = f"-Dhadoop.log.file={log_dir / daemon.name}.log"
        assert daemon.java() == [
            java,
            "-Xmx512m",
            "-Djava.net.preferIPv4Stack=true",
            f"-Djava.io.tmpdir={home / 'tmp' / daemon.name}",
            f"-Dlog4j.configuration=file:{home / 'conf' / 'log4j.properties'}",
            marker,
            "-cp",
            classpath,
            main_class,
        ]
        assert daemon.process.marker == marker
        assert daemon.process.pid_file == settings.var_dir / "run" / f"{daemon.name}.pid"
    assert NameNode(settings).address == "hdfs://127.0.0.1:39100"
    assert NameNode(settings).ui == "http://127.0.0.1:39101"
    assert DataNode(settings).address == "http://127.0.0.1:39103"


def test_a_name_directory_is_formatted_only_while_it_holds_no_file_system(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    namenode, formats = NameNode(settings), []
    monkeypatch.setattr(NameNode, "format", lambda self: formats.append(self.name_dir))
    namenode.prepare()
    assert formats == [namenode.name_dir]
    (namenode.name_dir / "current").mkdir(parents=True)
    (namenode.name_dir / "current" / "VERSION").write_text("clusterID=CID-1\n")
    (namenode.scratch_dir / "jetty-1").mkdir()
    namenode.prepare()
    assert formats == [namenode.name_dir]  # not again
    assert list(namenode.scratch_dir.iterdir()) == []  # the last run's scratch is gone


def test_ready_reads_the_namenodes_jmx(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    beans: dict[str, dict | None] = {}
    monkeypatch.setattr(hdfs, "namenode_bean", lambda _settings, name: beans.get(name))
    namenode, datanode = NameNode(settings), DataNode(settings)
    assert not namenode.ready() and not datanode.ready()
    beans["NameNodeStatus"] = {"State": "standby"}
    assert not namenode.ready()
    beans["NameNodeStatus"] = {"State": "active"}
    assert namenode.ready()

    ours = '{"localhost:39102": {"xferaddr": "127.0.0.1:39102"}}'
    other = '{"localhost:39202": {"xferaddr": "127.0.0.1:39202"}}'
    beans["NameNodeInfo"] = {"Safemode": "Safe mode is ON.", "LiveNodes": ours}
    assert not datanode.ready()  # registered, but writes are not taken yet
    beans["NameNodeInfo"] = {"Safemode": "", "LiveNodes": other}
    assert not datanode.ready()
    beans["NameNodeInfo"] = {"Safemode": "", "LiveNodes": ours}
    assert datanode.ready()


def test_a_datanode_without_a_namenode_is_refused_at_once(settings: Settings) -> None:
    alone = settings.model_copy(
        update={"hdfs_namenode_port": free_port(), "hdfs_namenode_http_port": free_port()}
    )
    datanode = DataNode(alone)
    with pytest.raises(BoardstreamError) as refused:
        datanode.start()
    assert str(refused.value) == (
        f"the HDFS DataNode needs the NameNode at hdfs://127.0.0.1:{alone.hdfs_namenode_port} "
        f"(UI http://127.0.0.1:{alone.hdfs_namenode_http_port}), which is not running: "
        "stack up --hdfs starts both"
    )
    assert not datanode.process.pid_file.exists() and not datanode.log_file.exists()
