"""Streaming checkpoints are written through Hadoop's FileSystem API (a session option, not
FileContext, which starts processes per file on a local file system), keep their checksums,
and a stateful query started again on them goes on where it stopped, also on a checkpoint
begun under Spark's default manager."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from boardstream.spark.checkpoint_files import CheckpointFiles
from boardstream.spark.session import CHECKPOINT_FILE_MANAGER as OPTION
from boardstream.spark.session import CHECKPOINT_FILES

# Spark's default, which wrote every checkpoint made before boardstream chose the other.
FILE_CONTEXT = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager"
)


def chosen_manager(spark: SparkSession, path: Path) -> str:
    """The checkpoint file manager a query started now would write ``path`` with."""
    jvm = spark._jvm
    manager = jvm.org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
    chosen = manager.create(
        jvm.org.apache.hadoop.fs.Path(str(path)),
        spark._jsparkSession.sessionState().newHadoopConf(),
    )
    return chosen.getClass().getName()


def test_a_sessions_checkpoint_files_go_through_the_file_system_api(
    spark: SparkSession, tmp_path: Path
) -> None:
    assert chosen_manager(spark, tmp_path) == CHECKPOINT_FILES


@pytest.mark.parametrize("first_written_by", [CHECKPOINT_FILES, FILE_CONTEXT])
def test_a_stateful_query_goes_on_from_its_checkpoint_with_checksums_kept(
    spark: SparkSession, tmp_path: Path, first_written_by: str
) -> None:
    """Also on a checkpoint begun under Spark's default manager (one made before the change)."""
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    source.mkdir()

    def add(name: str, keys: list[str]) -> None:
        (source / name).write_text("".join(json.dumps({"k": k}) + "\n" for k in keys))

    def counts() -> dict[str, int]:
        """One run of a RocksDB-state count over what the source holds, from the checkpoint."""
        query = (
            spark.readStream.schema("k string")
            .json(str(source))
            .groupBy("k")
            .agg(F.count("*").alias("n"))
            .writeStream.outputMode("complete")
            .format("memory")
            .queryName("checkpoint_files_counts")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        rows = spark.sql("SELECT k, n FROM checkpoint_files_counts").collect()
        return {row.k: row.n for row in rows}

    add("1.json", ["a", "b", "a"])
    spark.conf.set(OPTION, first_written_by)
    try:
        assert chosen_manager(spark, checkpoint) == first_written_by
        assert counts() == {"a": 2, "b": 1}
    finally:
        spark.conf.set(OPTION, CHECKPOINT_FILES)
    add("2.json", ["a", "c"])
    assert counts() == {"a": 3, "b": 1, "c": 1}  # the first file is not read again
    for log in ("offsets", "commits"):
        assert sorted(p.name for p in (checkpoint / log).iterdir()) == [
            ".0.crc",
            ".1.crc",
            "0",
            "1",
        ]
    state = [p for p in (checkpoint / "state").rglob("*.changelog")]
    assert state and all((p.parent / f".{p.name}.crc").is_file() for p in state)
    # boardstream's own reader accepts every file as Spark wrote it, several chunks long too.
    written = [p for p in checkpoint.rglob("*") if (p.parent / f".{p.name}.crc").is_file()]
    assert max(p.stat().st_size for p in written) > 512
    files = CheckpointFiles(spark)
    assert all(files.read_bytes(p.as_uri()) == p.read_bytes() for p in written)
