"""A SparkSession with the Kafka connector on its classpath and boardstream's defaults.

The connector jars come from ``var/jars/spark-kafka`` (fetched once by ``boardstream setup``),
so starting a job never downloads anything. Python workers use this interpreter, so the venv's
pandas and pyarrow are the ones the state functions run with. Spark logs at WARN (see
:mod:`boardstream.logs`); progress bars are drawn only on a terminal.
"""

from __future__ import annotations

import os
import subprocess
import sys

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from boardstream import logs
from boardstream.settings import Settings
from boardstream.spark import bind_address, jvm_options, jvm_stderr
from boardstream.stack import jars

# Checkpoint files through Hadoop's FileSystem API rather than its FileContext (Spark's default).
# Without Hadoop's native library the local file system starts a process for each `chmod`, and
# FileContext adds two `readlink`s per rename: 10 processes and about 30 ms per checkpoint file,
# against 2 and 7-9 ms (bench/checkpoint_files.py). The checkpoints are local or mounted paths
# (Settings.checkpoints), whose rename is atomic, as this manager needs; their `.crc` checksums
# stay. Spark's cloud-integration guide documents the option (for S3's manager).
CHECKPOINT_FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
CHECKPOINT_FILES = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)


def spark_session(
    settings: Settings,
    app_name: str,
    master: str | None = None,
    progress: bool = True,
    short_lived: bool = False,
) -> SparkSession:
    """``progress=False`` for a command whose output is a table: no progress bars between its
    lines even on a terminal. ``short_lived`` for a driver that plans a few small queries and
    exits (an incremental reconciliation): its JVM compiles with C1 only (:mod:`.jit`)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if not os.environ.get("SPARK_ENV_LOADED"):  # a JVM of this process's own: bind it too
        os.environ.update(bind_address.bind_env(master or settings.spark_master))
    # Under spark-submit (which exports SPARK_ENV_LOADED) its --master wins, and its JVM, already
    # running, was given boardstream's logging; otherwise this session starts the JVM.
    under_submit = bool(os.environ.get("SPARK_ENV_LOADED"))
    terminal = sys.stderr.isatty()
    options = session_options(
        settings,
        app_name,
        master,
        under_submit,
        console=progress and terminal,
        short_lived=short_lived,
    )
    if not under_submit and not terminal:
        _launch_jvm_into_logging(options)
    if settings.spark_event_log_dir is not None:
        _make_event_log_dir(settings.spark_event_log_dir, options)
    return SparkSession.builder.config(map=options).getOrCreate()


def session_options(
    settings: Settings,
    app_name: str,
    master: str | None,
    under_submit: bool,
    console: bool,
    short_lived: bool = False,
) -> dict[str, str]:
    """The session's Spark options: the connector and operator jars, RocksDB state with
    changelog checkpoints, checkpoint files through the FileSystem API, UTC; the master given,
    else the settings' unless spark-submit chose it; boardstream's logging (progress bars only
    on a ``console``) and the JVMs' options (:mod:`.jvm_options`: the parallel collector, the
    class archive, C1 only when ``short_lived``) when no spark-submit started the JVM."""
    classpath = jars.spark_classpath(settings.jars_dir)
    options = {
        "spark.app.name": app_name,
        "spark.jars": ",".join(str(jar) for jar in classpath),
        "spark.driver.memory": settings.spark_driver_memory,
        "spark.sql.shuffle.partitions": str(settings.partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.sql.streaming.stateStore.providerClass": (
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
        ),
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        # base64() would break a dead letter's original bytes into 76-character MIME lines.
        "spark.sql.chunkBase64String.enabled": "false",
        CHECKPOINT_FILE_MANAGER: CHECKPOINT_FILES,
        # A client's connection to an HDFS NameNode that restarted fails its next call
        # (EOFException, tests/integration/test_hdfs.py) unless it retries: 2 s apart, for up to
        # a minute, enough for a NameNode's restart and short of hiding one that is gone.
        "spark.hadoop.dfs.client.retry.policy.enabled": "true",
        "spark.hadoop.dfs.client.retry.policy.spec": "2000,30",
    }
    if settings.hdfs_replication is not None:
        options["spark.hadoop.dfs.replication"] = str(settings.hdfs_replication)
    if settings.spark_event_log_dir is not None:
        options["spark.eventLog.enabled"] = "true"
        options["spark.eventLog.dir"] = settings.spark_event_log_dir
    if master or not under_submit:
        options["spark.master"] = master or settings.spark_master
    if not under_submit:
        options |= logs.spark_conf(console=console)
        options = jvm_options.configure(options, settings.jars_dir, short_lived)
    return options


def _make_event_log_dir(uri: str, options: dict[str, str]) -> None:
    """Make the event log directory ``uri`` (Spark refuses to start without it), through
    Hadoop with the session's ``spark.hadoop.*`` settings, on the JVM the session will use."""
    conf = SparkConf(loadDefaults=False).setAll(list(options.items()))
    SparkContext._ensure_initialized(conf=conf)
    jvm = SparkContext._jvm
    hadoop = jvm.org.apache.hadoop.conf.Configuration()
    for key, value in options.items():
        if key.startswith("spark.hadoop."):
            hadoop.set(key.removeprefix("spark.hadoop."), value)
    path = jvm.org.apache.hadoop.fs.Path(uri)
    path.getFileSystem(hadoop).mkdirs(path)


def _launch_jvm_into_logging(options: dict[str, str]) -> None:
    """Start the driver's JVM (as getOrCreate would, with the session's options) with its
    stderr read into logging (:mod:`.jvm_stderr`); a terminal keeps the inherited stderr and
    its progress bars. A JVM already running in this process is left as it is."""
    if SparkContext._gateway is not None:
        return
    conf = SparkConf(loadDefaults=False)
    conf.setAll(list(options.items()))
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    jvm_stderr.forward(gateway.proc.stderr)
    SparkContext._ensure_initialized(gateway=gateway)
