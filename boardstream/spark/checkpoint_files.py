"""Files in a checkpoint at any Hadoop filesystem URI, written and read the way Spark writes
its own checkpoint files.

A checkpoint may live on HDFS, S3 or a local disk (``hdfs://…``, ``s3a://…``, ``file://…``; a
plain path means ``file://``), and what boardstream keeps beside Spark's files must be wherever
those are. The JVM's Hadoop client (through the session's gateway) does the IO: Spark's
FileContext-based checkpoint file manager writes, replacing a file atomically (a rename with
overwrite), and Hadoop's ``FileSystem`` reads, verifying the checksums its local
filesystem keeps beside each file (a file changed on disk behind Hadoop's back is refused).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from boardstream.errors import BoardstreamError
from boardstream.locations import shown

# Writes replace a file in one step: FileContext's rename with OVERWRITE is atomic (HDFS, local);
# the FileSystem-based manager's rename keeps the old file when the new one exists.
_MANAGER = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager"
)


class CheckpointFilesError(BoardstreamError):
    """A checkpoint file could not be read or written where its URI says."""


class CheckpointChecksumError(CheckpointFilesError):
    """A checkpoint file does not match the checksum Hadoop wrote beside it."""


_CHECKSUM_EXCEPTION = "org.apache.hadoop.fs.ChecksumException"
T = TypeVar("T")


class CheckpointFiles:
    """Read and write small files of checkpoints with the Hadoop configuration a query of
    ``spark`` would write its checkpoint with (its ``spark.hadoop.*`` settings, as they are when
    this is made)."""

    def __init__(self, spark: SparkSession) -> None:
        self._jvm: Any = spark._jvm
        self._conf: Any = spark._jsparkSession.sessionState().newHadoopConf()

    def _filesystem(self, uri: str) -> tuple[Any, Any]:
        path = self._jvm.org.apache.hadoop.fs.Path(uri)
        return path.getFileSystem(self._conf), path

    def _manager(self, uri: str) -> tuple[Any, Any]:
        path = self._jvm.org.apache.hadoop.fs.Path(uri)
        manager_class = self._jvm
        for part in _MANAGER.split("."):
            manager_class = getattr(manager_class, part)
        return manager_class(path.getParent(), self._conf), path

    def _do(self, doing: str, uri: str, action: Callable[[], T]) -> T:
        try:
            return action()
        except Py4JJavaError as error:
            java = error.java_exception
            if java.getClass().getName() == _CHECKSUM_EXCEPTION:
                name = uri.rstrip("/").rsplit("/", 1)[-1]
                raise CheckpointChecksumError(
                    f"checkpoint file {shown(uri)} does not match its checksum file .{name}.crc: "
                    "it was changed on disk after it was written, so what it records cannot be "
                    "trusted (Spark refuses it too when the job starts again). Restore the file, "
                    "or start the job from a new checkpoint (which reprocesses its sources from "
                    "the beginning)."
                ) from None
            raise CheckpointFilesError(
                f"{doing} {uri}: {java.getClass().getName()}: {java.getMessage()}"
            ) from None

    def exists(self, uri: str) -> bool:
        def check() -> bool:
            filesystem, path = self._filesystem(uri)
            return bool(filesystem.exists(path))

        return self._do("checking", uri, check)

    def list_names(self, uri: str) -> list[str]:
        """The names in the directory ``uri`` (none if it does not exist), without the checksum
        files Hadoop keeps beside local files."""

        def names() -> list[str]:
            filesystem, path = self._filesystem(uri)
            if not filesystem.exists(path):
                return []
            return [status.getPath().getName() for status in filesystem.listStatus(path)]

        return self._do("listing", uri, names)

    def read_text(self, uri: str) -> str:
        return self.read_bytes(uri).decode()

    def read_bytes(self, uri: str) -> bytes:
        def read() -> bytes:
            filesystem, path = self._filesystem(uri)
            stream = filesystem.open(path)
            try:
                return bytes(stream.readAllBytes())
            finally:
                stream.close()

        return self._do("reading", uri, read)

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
