"""A local HDFS for ``stack up --hdfs``: one NameNode and one DataNode, each a JVM of its own run
from Apache Hadoop's jars (``deps/hadoop-hdfs``), pid-managed like the broker.

A real distributed file system rather than the local disk, so what jobs do with ``hdfs://``
paths (Spark's output, checkpoints) is tried against the same client and protocol a cluster
has. Both daemons read one configuration directory, ``var/hdfs/conf``, written from the
settings at every start: every port of both is the settings', none left to Hadoop's defaults
(9000, 9870, 9864, 9866, 9867), so a second stack or an HDFS already on this machine is not
collided with. The NameNode's metadata (``var/hdfs/name``) is formatted once, when it holds no
file system yet, and never with ``-force``: Hadoop itself then refuses to format a directory
with data in it. Blocks live in ``var/hdfs/data``. A file's replication is its writer's choice:
Hadoop's default, 3, unless the client's configuration says 1, as a Spark session's does with
``spark.hadoop.dfs.replication=1``; the one DataNode holds one replica either way.

The DataNode needs the NameNode: ``up`` starts the NameNode first and reports HDFS started
once the NameNode has left safe mode with the DataNode live, which is when it takes writes.
Readiness is read from the NameNode's JMX over HTTP, without a JVM on our side.
"""

from __future__ import annotations

import http.client
import json
import logging
import shutil
import subprocess
import time
import urllib.request
from abc import ABC, abstractmethod
from typing import Any, ClassVar
from xml.sax.saxutils import escape

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.stack import jars
from boardstream.stack.ports import ListenPort, env_var
from boardstream.stack.processes import LocalService

logger = logging.getLogger(__name__)

# The daemons' heap: a development file system's metadata and block reports are small.
HEAP = "512m"
# What the platform expects of any HDFS it runs, local or in docker-compose (whose test reads
# it from here): one replica for clients that read this configuration, as there is one
# DataNode; and out of safe mode as soon as the blocks are reported, not 30 s later (the
# extension waits for more DataNodes, there are none).
HDFS_POLICY = {"dfs.replication": "1", "dfs.namenode.safemode.extension": "0"}
LOG4J = """\
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.out
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=[%d{ISO8601}] %p %m (%c)%n
"""


def site_xml(properties: dict[str, str]) -> str:
    """A Hadoop ``*-site.xml`` holding ``properties``."""
    lines = ['<?xml version="1.0"?>', "<configuration>"]
    lines += [
        f"  <property><name>{escape(name)}</name><value>{escape(value)}</value></property>"
        for name, value in properties.items()
    ]
    return "\n".join([*lines, "</configuration>"]) + "\n"


def namenode_bean(settings: Settings, name: str) -> dict[str, Any] | None:
    """The NameNode's JMX bean ``Hadoop:service=NameNode,name=<name>``, or None while its web
    server does not answer or has not registered the bean yet."""
    url = (
        f"http://{settings.hdfs_host}:{settings.hdfs_namenode_http_port}"
        f"/jmx?qry=Hadoop:service=NameNode,name={name}"
    )
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            beans = json.load(response).get("beans", [])
    except (OSError, http.client.HTTPException, ValueError):  # refused, cut off, not JSON yet
        return None
    return beans[0] if beans else None


class HdfsDaemon(LocalService, ABC):
    """What the NameNode and the DataNode share: the configuration they read and how they are
    started. Both keep to one home, ``var/hdfs``, as a Hadoop installation's daemons share its
    configuration directory."""

    main_class: ClassVar[str]
    role: ClassVar[str]

    def __init__(self, settings: Settings) -> None:
        log_file = settings.var_dir / "log" / f"{self.name}.log"
        # Hadoop's own name for the daemon's log file, unique per daemon and var dir.
        super().__init__(settings, marker=f"-Dhadoop.log.file={log_file}")
        self.home = settings.var_dir / "hdfs"
        self.conf_dir = self.home / "conf"
        self.name_dir = self.home / "name"
        self.data_dir = self.home / "data"
        # The JVM's scratch: Jetty unpacks the web UI there at every start and leaves it behind.
        self.scratch_dir = self.home / "tmp" / self.name

    def core_site(self) -> dict[str, str]:
        return {
            "fs.defaultFS": self.settings.hdfs_uri,
            "hadoop.tmp.dir": str(self.home / "tmp"),
        }

    def hdfs_site(self) -> dict[str, str]:
        """Where each daemon keeps its data and listens; every port from the settings."""
        s, host = self.settings, self.settings.hdfs_host
        return {
            "dfs.namenode.name.dir": str(self.name_dir),
            "dfs.datanode.data.dir": str(self.data_dir),
            **HDFS_POLICY,
            "dfs.namenode.rpc-address": f"{host}:{s.hdfs_namenode_port}",
            "dfs.namenode.http-address": f"{host}:{s.hdfs_namenode_http_port}",
            "dfs.datanode.address": f"{host}:{s.hdfs_datanode_port}",
            "dfs.datanode.http.address": f"{host}:{s.hdfs_datanode_http_port}",
            "dfs.datanode.ipc.address": f"{host}:{s.hdfs_datanode_ipc_port}",
        }

    def configure(self) -> None:
        """Write the configuration both daemons read (the same for both, from the settings)."""
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "core-site.xml").write_text(site_xml(self.core_site()))
        (self.conf_dir / "hdfs-site.xml").write_text(site_xml(self.hdfs_site()))
        (self.conf_dir / "log4j.properties").write_text(LOG4J)

    def java(self, *args: str) -> list[str]:
        """The daemon's command line: the configuration directory first on the classpath (Hadoop
        reads its ``*-site.xml`` from there), then the jars."""
        java = shutil.which("java")
        if java is None:
            raise BoardstreamError("java is not installed; bin/setup installs OpenJDK 17")
        classpath = [self.conf_dir, *jars.require(jars.HDFS, self.settings.jars_dir)]
        return [
            java,
            f"-Xmx{HEAP}",
            # As Hadoop's own scripts start its daemons.
            "-Djava.net.preferIPv4Stack=true",
            f"-Djava.io.tmpdir={self.scratch_dir}",
            f"-Dlog4j.configuration=file:{self.conf_dir / 'log4j.properties'}",
            self.process.marker,
            "-cp",
            ":".join(str(entry) for entry in classpath),
            self.main_class,
            *args,
        ]

    @abstractmethod
    def ready(self) -> bool:
        """Whether the NameNode's JMX shows this daemon ready."""

    def prepare(self) -> None:
        """What the daemon needs done between writing the configuration and starting: its
        scratch directory emptied (nothing in it outlives the process that wrote it)."""
        shutil.rmtree(self.scratch_dir, ignore_errors=True)
        self.scratch_dir.mkdir(parents=True)

    def start(self, timeout_s: float = 120.0) -> int:
        began = time.monotonic()
        self.configure()
        self.prepare()
        process = self.process.start(self.java(), self.log_file)
        self.await_ready(process, self.ready, f"the HDFS {self.role}", timeout_s)
        logger.info("the HDFS %s was ready in %.1f s", self.role, time.monotonic() - began)
        return process.pid


class NameNode(HdfsDaemon):
    name = "namenode"
    main_class = "org.apache.hadoop.hdfs.server.namenode.NameNode"
    role = "NameNode"

    @property
    def address(self) -> str:
        """The file system's URI, which paths start with."""
        return self.settings.hdfs_uri

    @property
    def ui(self) -> str:
        return f"http://{self.settings.hdfs_host}:{self.settings.hdfs_namenode_http_port}"

    def listen_ports(self) -> list[ListenPort]:
        s = self.settings
        return [
            ListenPort(s.hdfs_namenode_port, "namenode's RPC", env_var("hdfs_namenode_port")),
            ListenPort(
                s.hdfs_namenode_http_port, "namenode's web UI", env_var("hdfs_namenode_http_port")
            ),
        ]

    def formatted(self) -> bool:
        """Whether the name directory holds a file system (Hadoop writes ``current/VERSION`` when
        it formats one)."""
        return (self.name_dir / "current" / "VERSION").is_file()

    def format(self) -> None:
        """Format a new file system; its output goes to the NameNode's log. ``-nonInteractive``
        without ``-force``: a name directory with anything in it is refused, not wiped."""
        logger.info("formatting the HDFS NameNode's new name directory %s", self.name_dir)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            result = subprocess.run(
                self.java("-format", "-nonInteractive"),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        if result.returncode != 0 or not self.formatted():
            raise BoardstreamError(
                f"formatting the HDFS NameNode's {self.name_dir} failed (code "
                f"{result.returncode}); see {self.log_file}"
            )

    def ready(self) -> bool:
        """Up and serving RPC: Hadoop registers this bean once the NameNode is fully started.
        It may still be in safe mode, until the DataNode reports its blocks."""
        status = namenode_bean(self.settings, "NameNodeStatus")
        return status is not None and status.get("State") == "active"

    def prepare(self) -> None:
        """A new name directory is formatted; one holding a file system never is again."""
        super().prepare()
        if not self.formatted():
            self.format()


class DataNode(HdfsDaemon):
    name = "datanode"
    main_class = "org.apache.hadoop.hdfs.server.datanode.DataNode"
    role = "DataNode"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.namenode = NameNode(settings)

    @property
    def address(self) -> str:
        """Its web UI."""
        return f"http://{self.settings.hdfs_host}:{self.settings.hdfs_datanode_http_port}"

    @property
    def transfer_address(self) -> str:
        """Where clients send and fetch blocks, and how the NameNode lists it."""
        return f"{self.settings.hdfs_host}:{self.settings.hdfs_datanode_port}"

    def listen_ports(self) -> list[ListenPort]:
        """Its data transfer, web UI and IPC ports; its web UI's internal port is any free one
        of the loopback interface (Hadoop picks it)."""
        s = self.settings
        return [
            ListenPort(
                s.hdfs_datanode_port, "datanode's data transfer", env_var("hdfs_datanode_port")
            ),
            ListenPort(
                s.hdfs_datanode_http_port, "datanode's web UI", env_var("hdfs_datanode_http_port")
            ),
            ListenPort(
                s.hdfs_datanode_ipc_port, "datanode's IPC", env_var("hdfs_datanode_ipc_port")
            ),
        ]

    def ready(self) -> bool:
        """The NameNode lists this DataNode as live and has left safe mode: writes are taken."""
        info = namenode_bean(self.settings, "NameNodeInfo")
        if info is None or info.get("Safemode") != "":
            return False
        try:
            live = json.loads(info.get("LiveNodes") or "{}")
        except ValueError:
            return False
        return any(node.get("xferaddr") == self.transfer_address for node in live.values())

    def start(self, timeout_s: float = 120.0) -> int:
        """Refused at once without a NameNode to register with (it would retry for ever)."""
        if not self.namenode.ready():
            raise BoardstreamError(
                f"the HDFS DataNode needs the NameNode at {self.namenode.address} (UI "
                f"{self.namenode.ui}), which is not running: stack up --hdfs starts both"
            )
        return super().start(timeout_s)
