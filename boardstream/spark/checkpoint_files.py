"""Files in a checkpoint at any Hadoop filesystem URI, written and read the way Spark writes
its own checkpoint files.

A checkpoint may live on HDFS, S3 or a local disk (``hdfs://…``, ``s3a://…``, ``file://…``; a
plain path means ``file://``), and what boardstream keeps beside Spark's files must be wherever
those are. The JVM's Hadoop client (through the session's gateway) does the IO: Spark's
``CheckpointFileManager`` writes, atomically on every filesystem (a rename where one is atomic, a
single object write on S3), and Hadoop's ``FileSystem`` reads, verifying the checksums its local
filesystem keeps beside each file (a file changed on disk behind Hadoop's back is refused).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from boardstream.errors import BoardstreamError

_MANAGER = "org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager"


class CheckpointFilesError(BoardstreamError):
    """A checkpoint file could not be read or written where its URI says."""


def checkpoint_uri(location: str | Path) -> str:
    """``location`` as a URI: one with a scheme as it is, a plain path as an absolute
    ``file://`` URI (a cluster's default filesystem must not reinterpret it)."""
    text = str(location)
    if len(urlsplit(text).scheme) > 1:  # "C:" is a drive, not a scheme
        return text.rstrip("/")
    return Path(text).absolute().as_uri()


def child(uri: str, name: str) -> str:
    """The file ``name`` in the directory ``uri``."""
    return f"{uri.rstrip('/')}/{name}"


class CheckpointFiles:
    """Read and write small files of checkpoints through one JVM's Hadoop configuration (the
    session's: its ``spark.hadoop.*`` settings reach the filesystems)."""

    def __init__(self, spark: SparkSession) -> None:
        self._jvm: Any = spark._jvm
        self._conf: Any = spark._jsc.hadoopConfiguration()  # type: ignore[union-attr]

    def _filesystem(self, uri: str) -> tuple[Any, Any]:
        path = self._jvm.org.apache.hadoop.fs.Path(uri)
        return path.getFileSystem(self._conf), path

    def _manager(self, uri: str) -> tuple[Any, Any]:
        path = self._jvm.org.apache.hadoop.fs.Path(uri)
        manager_class = self._jvm
        for part in _MANAGER.split("."):
            manager_class = getattr(manager_class, part)
        return manager_class.create(path, self._conf), path

    def _do(self, doing: str, uri: str, action: Any) -> Any:
        try:
            return action()
        except Py4JJavaError as error:
            java = error.java_exception
            raise CheckpointFilesError(
                f"{doing} {uri}: {java.getClass().getName()}: {java.getMessage()}"
            ) from None

    def exists(self, uri: str) -> bool:
        def check() -> bool:
            filesystem, path = self._filesystem(uri)
            return bool(filesystem.exists(path))

        return self._do("checking", uri, check)

    def read_text(self, uri: str) -> str:
        def read() -> bytes:
            filesystem, path = self._filesystem(uri)
            stream = filesystem.open(path)
            try:
                return bytes(stream.readAllBytes())
            finally:
                stream.close()

        return self._do("reading", uri, read).decode()

    def write_text(self, uri: str, text: str) -> None:
        """Replace ``uri``'s content with ``text`` at once: a reader sees the old or the new."""

        def write() -> None:
            manager, path = self._manager(uri)
            manager.mkdirs(path.getParent())
            stream = manager.createAtomic(path, True)
            try:
                stream.write(bytearray(text.encode()))
            except BaseException:
                stream.cancel()
                raise
            stream.close()

        self._do("writing", uri, write)
