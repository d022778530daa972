"""The local HDFS as `stack up --hdfs` runs it: a real NameNode and DataNode on ports of their own
in a var dir of their own, written to and read back through Spark's own Hadoop client (pyspark's
hadoop-client-api/runtime, the same 3.5.0 release), stopped by `stack down`, and started again
on the same metadata and blocks without formatting them again. Through the CLI, a second `up`
finds both running and starts nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from boardstream.settings import Settings
from boardstream.spark.checkpoint_files import CheckpointFiles
from boardstream.spark.checkpoint_guard import (
    CheckpointMismatchError,
    guard_checkpoint,
    recorded_identity,
)
from boardstream.stack.hdfs import DataNode, NameNode
from boardstream.stack.local import LocalStack
from tests.fixtures import cli, cli_env, isolated_settings

pytestmark = pytest.mark.integration


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def settings(tmp_path: Path) -> Iterator[Settings]:
    """A stack of its own (HDFS and, for the CLI's `up`, Kafka) on free ports; whatever a test
    left running is stopped."""
    made = isolated_settings(tmp_path / "var")
    yield made
    LocalStack(made).down()


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """A plain local session, for its Hadoop client: the suite's session fixture starts a Kafka
    broker these tests do not need. A session this process already has is used and left
    running. Its files get one replica: the writing client chooses (Hadoop's default is 3), and
    the one DataNode can hold one."""
    existing = SparkSession.getActiveSession()
    session = existing or (
        SparkSession.builder.master("local[1]")
        .appName("boardstream-hdfs-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    session._jsc.hadoopConfiguration().set("dfs.replication", "1")
    # A client's connection to a NameNode that restarted fails its next call (EOFException)
    # unless the client retries, as a cluster's clients are configured to.
    session._jsc.hadoopConfiguration().set("dfs.client.retry.policy.enabled", "true")
    yield session
    if existing is None:
        session.stop()


def write_file(spark: SparkSession, uri: str, payload: bytes) -> None:
    path = spark._jvm.org.apache.hadoop.fs.Path(uri)
    out = path.getFileSystem(spark._jsc.hadoopConfiguration()).create(path, True)
    try:
        out.write(payload)
    finally:
        out.close()


def read_file(spark: SparkSession, uri: str) -> tuple[bytes, int]:
    """The file's bytes and its replication."""
    path = spark._jvm.org.apache.hadoop.fs.Path(uri)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    stream = fs.open(path)
    try:
        return bytes(stream.readAllBytes()), fs.getFileStatus(path).getReplication()
    finally:
        stream.close()


def test_files_written_to_hdfs_survive_a_restart(settings: Settings, spark: SparkSession) -> None:
    namenode, datanode = NameNode(settings), DataNode(settings)
    pids = [namenode.start(), datanode.start()]
    assert [namenode.process.pid(), datanode.process.pid()] == pids
    assert namenode.address == f"hdfs://127.0.0.1:{settings.hdfs_namenode_port}"

    # Every byte value, past one packet (64 KiB), and random bytes: read back exactly.
    payload = bytes(range(256)) * 4096 + os.urandom(54321)
    file_uri, table_uri = f"{settings.hdfs_uri}/tests/payload.bin", f"{settings.hdfs_uri}/tests/ids"
    write_file(spark, file_uri, payload)
    assert read_file(spark, file_uri) == (payload, 1)
    spark.range(0, 5000, numPartitions=3).write.parquet(table_uri)
    ids = sorted(row.id for row in spark.read.parquet(table_uri).collect())
    assert ids == list(range(5000))

    version = (namenode.name_dir / "current" / "VERSION").read_text()
    assert LocalStack(settings).down() == ["datanode stopped", "namenode stopped"]
    for pid in pids:
        assert not _running(pid), f"pid {pid} still running after down"
    assert (namenode.process.pid(), datanode.process.pid()) == (None, None)

    pids = [namenode.start(), datanode.start()]
    assert read_file(spark, file_uri) == (payload, 1)
    assert sorted(row.id for row in spark.read.parquet(table_uri).collect()) == ids
    # The same file system: not formatted again.
    assert (namenode.name_dir / "current" / "VERSION").read_text() == version
    assert namenode.log_file.read_text().count("has been successfully formatted") == 1


def test_a_stateful_query_resumes_from_its_checkpoint_on_hdfs(
    settings: Settings, spark: SparkSession, tmp_path: Path
) -> None:
    """Spark keeps the checkpoint on HDFS, and boardstream's guard records the identity beside
    it, reads it back and refuses another query's; the commit log is listed where Spark wrote
    it."""
    NameNode(settings).start()
    DataNode(settings).start()
    source, checkpoint = tmp_path / "in", f"{settings.hdfs_uri}/checkpoints/counts"
    source.mkdir()
    files = CheckpointFiles(spark)

    def counts(name: str, keys: list[str]) -> dict[str, int]:
        (source / name).write_text("".join(json.dumps({"k": k}) + "\n" for k in keys))
        guard_checkpoint(files, checkpoint, {"query": "counts"})
        query = (
            spark.readStream.schema("k string")
            .json(str(source))
            .groupBy("k")
            .agg(F.count("*").alias("n"))
            .writeStream.outputMode("complete")
            .format("memory")
            .queryName("hdfs_counts")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return {row.k: row.n for row in spark.sql("SELECT k, n FROM hdfs_counts").collect()}

    assert counts("1.json", ["a", "b", "a"]) == {"a": 2, "b": 1}
    assert counts("2.json", ["a", "c"]) == {"a": 3, "b": 1, "c": 1}  # state from HDFS
    assert files.list_names(f"{checkpoint}/commits") == ["0", "1"]
    assert recorded_identity(files, checkpoint) == {"query": "counts"}
    with pytest.raises(
        CheckpointMismatchError, match=f"refusing to resume checkpoint {checkpoint}"
    ):
        guard_checkpoint(files, checkpoint, {"query": "other"})
    assert not (tmp_path / "checkpoints").exists()  # nothing of it on the local disk


EVENT_LOGGED = """
import sys
from boardstream.settings import Settings
from boardstream.spark.session import spark_session
spark = spark_session(Settings(), "event-logged", master="local[1]", progress=False)
assert spark.range(10).count() == 10
print(spark.sparkContext.applicationId, flush=True)
spark.stop()
"""


def test_a_sessions_event_log_lands_on_hdfs_in_a_directory_it_makes(
    settings: Settings, spark: SparkSession
) -> None:
    """Where a driver's record is, readable from any host once it ended (issue #50)."""
    NameNode(settings).start()
    DataNode(settings).start()
    events = f"{settings.hdfs_uri}/boardstream/spark-events"
    env = {"BOARDSTREAM_SPARK_EVENT_LOG_DIR": events, "BOARDSTREAM_HDFS_REPLICATION": "1"}
    done = subprocess.run(
        [sys.executable, "-c", EVENT_LOGGED],
        env=cli_env(settings, env),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    application = done.stdout.split()[-1]
    files = CheckpointFiles(spark)
    assert files.list_names(events) == [f"eventlog_v2_{application}"]  # Spark 4's rolling log
    written = files.list_names(f"{events}/eventlog_v2_{application}")
    # Ended (its status no longer .inprogress), its events compressed as Spark 4 writes them.
    assert written == [f"appstatus_{application}", f"events_1_{application}.zstd"]


def test_up_twice_starts_hdfs_once_and_down_stops_both(settings: Settings) -> None:
    first = cli(settings, "stack", "up", "--hdfs", timeout=300)
    assert first.returncode == 0, first.stderr
    *lines, database = first.stdout.splitlines()
    assert database == (
        f"the platform's database: {settings.database} (BOARDSTREAM_DATABASE_URL unset)"
    )
    assert [line.split(" (pid")[0] for line in lines] == [
        "kafka started",
        "namenode started",
        "datanode started",
    ]
    pids = {line.split()[0]: int(line.split("pid ")[1].split(")")[0]) for line in lines}
    namenode, datanode = NameNode(settings), DataNode(settings)
    assert lines[1:] == [
        f"namenode started (pid {pids['namenode']}) on {settings.hdfs_uri}",
        f"datanode started (pid {pids['datanode']}) on {datanode.address}",
    ]

    second = cli(settings, "stack", "up", "--hdfs")
    assert (second.returncode, second.stderr) == (0, "")
    assert second.stdout.splitlines()[1:] == [
        f"namenode already running (pid {pids['namenode']}) on {namenode.address}",
        f"datanode already running (pid {pids['datanode']}) on {datanode.address}",
        database,
    ]
    status = [line.split()[:4] for line in cli(settings, "stack", "status").stdout.splitlines()]
    for name, pid in pids.items():
        assert [name, "running", "(pid", f"{pid})"] in status, name

    down = cli(settings, "stack", "down")
    assert down.stdout.splitlines() == ["datanode stopped", "namenode stopped", "kafka stopped"]
    for pid in pids.values():
        assert not _running(pid), f"pid {pid} still running after down"
