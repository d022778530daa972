"""A local Spark standalone cluster (one master, one worker) for ``stack up --spark-cluster``,
or one of them per host (``stack up --only spark-master`` / ``--only spark-worker``).

Both run from the pyspark wheel, a full Spark distribution without the ``sbin/start-*.sh``
scripts, as ``bin/spark-class <main class>`` in the foreground, pid-managed like the broker.
Each reads its ``spark.*`` settings from a properties file in its home, and that file's path on
its command line is its marker (it is there from the first exec, before spark-class execs the
JVM). A busy port fails the start instead of Spark moving to the next one, which would leave
the settings naming the wrong port.

Where each binds, and advertises itself at: the master at ``BOARDSTREAM_SPARK_MASTER_HOST``
(127.0.0.1 by default), which is also where a worker registers and where the master's state is
read from; a worker at its own host's address, ``SPARK_LOCAL_IP`` when set (a test host's
processes have it, see hosts.py), else the address the route to its master leaves by (so
127.0.0.1 for a master on the loopback). A worker bound to the loopback of a host other than its
master's registers, but the master and the drivers cannot reach it.

Jobs reach the cluster through the one master setting: ``BOARDSTREAM_SPARK_MASTER=spark://
<master host>:<port>``. Their Python drivers run in client mode (the only mode standalone offers
Python); spark-submit's ``--jars`` ships the connector to the executors, which run this venv's
Python (``spark.pyspark.python``, see ``spark/submit.py``).
"""

from __future__ import annotations

import functools
import logging
import os
import subprocess
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.spark import standalone
from boardstream.spark.bind_address import ENV, route_to
from boardstream.spark.submit import spark_home
from boardstream.stack.ports import ListenPort, env_var
from boardstream.stack.processes import LocalService

logger = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
# The daemons' own heap (spark-class's default is 1g); executors are JVMs of their own.
DAEMON_MEMORY = "512m"
# A master removes an application, and so ends its driver, once 10 executor launches in a row
# failed with none running: a worker shutting down fails each launch at once, and restarting
# it killed the live join. A stream left without executors waits instead, and its health says
# so ("no executor"). docker-compose.yml's master is given the same.
KEEP_APPS = {"spark.deploy.maxExecutorRetries": "-1"}


def master_state(settings: Settings) -> dict[str, Any] | None:
    """The local master's state (:func:`.standalone.master_state`), asked where it listens:
    ``spark_master_host``."""
    return standalone.master_state(settings.spark_master_host, settings.spark_master_ui_port)


class SparkDaemon(LocalService, ABC):
    """What the master and the worker share: how they are started and waited for."""

    main_class: ClassVar[str]
    role: ClassVar[str]

    def __init__(self, settings: Settings) -> None:
        properties_file = settings.var_dir / self.name / "spark.properties"
        super().__init__(settings, marker=str(properties_file))
        self.properties_file = properties_file

    @property
    @abstractmethod
    def host(self) -> str:
        """The address it binds to and advertises (its RPC and its web UI)."""

    def properties(self) -> dict[str, str]:
        # Spark would otherwise try up to 16 ports after a busy one.
        return {"spark.port.maxRetries": "0"}

    @abstractmethod
    def arguments(self) -> list[str]:
        """The main class's arguments: its ports, and the worker its master and resources."""

    def command(self) -> list[str]:
        return [
            str(spark_home() / "bin" / "spark-class"),
            self.main_class,
            "--properties-file",
            str(self.properties_file),
            *self.arguments(),
        ]

    def env(self) -> dict[str, str]:
        return {
            "SPARK_HOME": str(spark_home()),
            # The RPC server and the web UI bind here, and the master lists the worker's UI
            # under this name (see SparkWorker.ready).
            "SPARK_LOCAL_IP": self.host,
            "SPARK_PUBLIC_DNS": self.host,
            "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        }

    @abstractmethod
    def ready(self, state: dict[str, Any]) -> bool:
        """Whether the master's state (``master_state``) shows this daemon ready."""

    def start(self, timeout_s: float = 120.0) -> int:
        self.home.mkdir(parents=True, exist_ok=True)
        self.properties_file.write_text(
            "".join(f"{key}={value}\n" for key, value in self.properties().items())
        )
        process = self.process.start(self.command(), self.log_file, self.env())
        self._wait_ready(process, timeout_s)
        return process.pid

    def _wait_ready(self, process: subprocess.Popen[bytes], timeout_s: float) -> None:
        """Return once the master's JSON shows this daemon ready, or explain why it did not."""

        def listed() -> bool:
            state = master_state(self.settings)
            return state is not None and self.ready(state)

        self.await_ready(process, listed, f"the Spark {self.role}", timeout_s)


class SparkMaster(SparkDaemon):
    name = "spark-master"
    main_class = "org.apache.spark.deploy.master.Master"
    role = "master"

    @property
    def host(self) -> str:
        return self.settings.spark_master_host

    @property
    def address(self) -> str:
        """What ``BOARDSTREAM_SPARK_MASTER`` is set to for jobs to run on this cluster, and
        what its workers register with."""
        return f"spark://{self.host}:{self.settings.spark_master_port}"

    @property
    def ui(self) -> str:
        return f"http://{self.host}:{self.settings.spark_master_ui_port}"

    def listen_ports(self) -> list[ListenPort]:
        return [
            ListenPort(
                self.settings.spark_master_port, "spark-master's RPC", env_var("spark_master_port")
            ),
            ListenPort(
                self.settings.spark_master_ui_port,
                "spark-master's web UI",
                env_var("spark_master_ui_port"),
            ),
        ]

    def properties(self) -> dict[str, str]:
        # The REST server serves cluster-mode submissions (not for Python) on a fixed port
        # (6066) that a second local cluster could not get.
        return {**super().properties(), "spark.master.rest.enabled": "false", **KEEP_APPS}

    def arguments(self) -> list[str]:
        return [
            "--host",
            self.host,
            "--port",
            str(self.settings.spark_master_port),
            "--webui-port",
            str(self.settings.spark_master_ui_port),
        ]

    def ready(self, state: dict[str, Any]) -> bool:
        return state.get("url") == self.address and state.get("status") == "ALIVE"

    def how_jobs_reach_it(self) -> str:
        """The line ``stack up --spark-cluster`` ends with: where jobs run now, and how to send
        them to the cluster."""
        if self.settings.spark_master == self.address:
            return f"jobs run on this cluster (BOARDSTREAM_SPARK_MASTER={self.address})"
        return (
            f"jobs run in {self.settings.spark_master}; to run them on this cluster: "
            f"BOARDSTREAM_SPARK_MASTER={self.address} (its UI: {self.ui})"
        )


class SparkWorker(SparkDaemon):
    name = "spark-worker"
    main_class = "org.apache.spark.deploy.worker.Worker"
    role = "worker"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.work_dir = self.home / "work"
        self.master = SparkMaster(settings)

    @functools.cached_property
    def host(self) -> str:
        """Its own host's address: ``SPARK_LOCAL_IP`` when set, else the source address of the
        route to its master (127.0.0.1 for a master on the loopback); read once."""
        return os.environ.get(ENV) or route_to(self.master.address) or LOOPBACK

    @property
    def address(self) -> str:
        """Its web UI, which is also how the master's JSON names it."""
        return f"http://{self.host}:{self.settings.spark_worker_ui_port}"

    def listen_ports(self) -> list[ListenPort]:
        """Its web UI's; its own port is any free one (Spark picks it)."""
        port = self.settings.spark_worker_ui_port
        return [ListenPort(port, "spark-worker's web UI", env_var("spark_worker_ui_port"))]

    def arguments(self) -> list[str]:
        return [
            self.master.address,
            "--host",
            self.host,
            "--cores",
            str(self.settings.spark_worker_cores),
            "--memory",
            self.settings.spark_worker_memory,
            "--webui-port",
            str(self.settings.spark_worker_ui_port),
            "--work-dir",
            str(self.work_dir),
        ]

    def short_of_streams(self) -> str | None:
        """What the live streams (join and sink, each with its own cores) would lack on this
        worker alone, and the setting to change; None when they fit."""
        s = self.settings
        needed = s.stream_join_cores + s.stream_sink_cores
        if s.spark_worker_cores >= needed:
            return None
        return (
            f"the Spark worker offers {s.spark_worker_cores} cores and the live streams take "
            f"{needed} (join {s.stream_join_cores}, sink {s.stream_sink_cores}): the second "
            f"would be refused. Set {env_var('spark_worker_cores')}={needed} (cores are task "
            "slots: more than the machine has is allowed)"
        )

    def ready(self, state: dict[str, Any]) -> bool:
        """Registered: the master lists it as an ALIVE worker."""
        return any(
            worker.get("webuiaddress") == self.address and worker.get("state") == "ALIVE"
            for worker in state.get("workers", [])
        )

    def start(self, timeout_s: float = 120.0) -> int:
        """Refused at once without a master to register with (it would retry for minutes);
        a worker too small for both live streams is said before it starts."""
        short = self.short_of_streams()
        if short:
            logger.warning("%s", short)
        state = master_state(self.settings)
        if state is None or not self.master.ready(state):
            where = f"the master at {self.master.address} (UI {self.master.ui})"
            if self.master.host == LOOPBACK:
                raise BoardstreamError(
                    f"the Spark worker needs {where}, which is not running: stack up "
                    "--spark-cluster starts both"
                )
            raise BoardstreamError(
                f"the Spark worker needs {where}, which does not answer from here: stack up "
                f"--only spark-master starts it on that host, with "
                f"{env_var('spark_master_host')}={self.master.host}"
            )
        return super().start(timeout_s)
