"""Streaming checkpoint files through Hadoop's FileContext (Spark's default) and FileSystem
(boardstream's, ``session.CHECKPOINT_FILES``) APIs, side by side in one session.

    .venv/bin/python bench/checkpoint_files.py             # 200 files x 3, 10 batches
    .venv/bin/python bench/checkpoint_files.py --files 500 --batches 20

For each manager: the time to write one small checkpoint file atomically (as the offset and
commit logs and the state store's changelogs are written), then a stateful query (a RocksDB
count, one micro-batch per new input file) and the medians of its batches' log writes and state
commits, as its progress reports them. Needs no broker.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from boardstream import logs
from boardstream.settings import Settings
from boardstream.spark.session import CHECKPOINT_FILE_MANAGER as OPTION
from boardstream.spark.session import CHECKPOINT_FILES, spark_session

MANAGERS = {
    "FileContext (Spark's default)": (
        "org.apache.spark.sql.execution.streaming.checkpointing."
        "FileContextBasedCheckpointFileManager"
    ),
    "FileSystem (boardstream's)": CHECKPOINT_FILES,
}


def file_ms(spark: SparkSession, manager: str, work: Path, files: int) -> float:
    """Milliseconds to write one 1 KB checkpoint file (temporary file, then rename)."""
    jvm = spark._jvm
    conf = jvm.org.apache.hadoop.conf.Configuration(spark._jsc.hadoopConfiguration())
    conf.set(OPTION, manager)
    root = jvm.org.apache.hadoop.fs.Path(str(work))
    files_api = jvm.org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
    chosen = files_api.create(root, conf)
    assert chosen.getClass().getName() == manager, chosen.getClass().getName()
    chosen.mkdirs(root)
    data = bytearray(1000)
    began = time.perf_counter()
    for i in range(files):
        out = chosen.createAtomic(jvm.org.apache.hadoop.fs.Path(f"{work}/{i}"), False)
        out.write(data)
        out.close()
    return (time.perf_counter() - began) / files * 1000


def batch_medians(spark: SparkSession, manager: str, work: Path, batches: int) -> dict[str, int]:
    """A RocksDB count over a file source, one batch per file: the medians of its batches'
    offset-log write, commit-log write and state commit (summed over partitions), in ms."""
    spark.conf.set(OPTION, manager)
    source = work / "in"
    source.mkdir(parents=True)
    (source / "0.json").write_text("")
    query = (
        spark.readStream.schema("k string")
        .option("maxFilesPerTrigger", 1)
        .json(str(source))
        .groupBy("k")
        .agg(F.count("*").alias("n"))
        .writeStream.outputMode("update")
        .format("noop")
        .option("checkpointLocation", str(work / "checkpoint"))
        .start()
    )
    try:
        for b in range(1, batches + 1):
            rows = "".join(json.dumps({"k": f"key-{b}-{i % 50}"}) + "\n" for i in range(500))
            (source / f"{b}.json").write_text(rows)
            query.processAllAvailable()
        reported = [json.loads(p.json) for p in query.recentProgress]
        progress = [p for p in reported if p["numInputRows"] > 0]
    finally:
        query.stop()
        spark.conf.unset(OPTION)
    return {
        "walCommit": round(statistics.median(p["durationMs"]["walCommit"] for p in progress)),
        "commitOffsets": round(
            statistics.median(p["durationMs"]["commitOffsets"] for p in progress)
        ),
        "state commit": round(
            statistics.median(sum(o["commitTimeMs"] for o in p["stateOperators"]) for p in progress)
        ),
        "batch": round(statistics.median(p["durationMs"]["triggerExecution"] for p in progress)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200, help="files per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=10, help="micro-batches per query")
    args = parser.parse_args()
    logs.configure(verbose=False)
    spark = spark_session(Settings(), "bench-checkpoint-files", progress=False)
    spark.sparkContext.setLogLevel("ERROR")
    per_file: dict[str, list[float]] = {name: [] for name in MANAGERS}
    per_query: dict[str, list[dict[str, int]]] = {name: [] for name in MANAGERS}
    with tempfile.TemporaryDirectory(prefix="bench-checkpoint-files-") as tmp:
        work = Path(tmp)
        # Alternating, the order reversed each round, so neither gets the warmer JVM.
        for r in range(args.rounds):
            order = list(enumerate(MANAGERS.items()))[:: 1 if r % 2 == 0 else -1]
            for i, (name, manager) in order:
                per_file[name].append(file_ms(spark, manager, work / f"files-{r}-{i}", args.files))
                per_query[name].append(
                    batch_medians(spark, manager, work / f"query-{r}-{i}", args.batches)
                )
    print(
        f"\n| manager | ms per file ({args.rounds} rounds of {args.files}) | a query's "
        f"offset log / commit log / state commit / batch, ms (medians of {args.batches} "
        "batches, each round) |"
    )
    print("|---|---|---|")
    for name in MANAGERS:
        files = ", ".join(f"{ms:.1f}" for ms in per_file[name])
        queries = "; ".join(
            f"{m['walCommit']} / {m['commitOffsets']} / {m['state commit']} / {m['batch']}"
            for m in per_query[name]
        )
        print(f"| {name} | {files} | {queries} |")
    slow, fast = (statistics.median(per_file[name]) for name in MANAGERS)
    long, short = (statistics.median(m["batch"] for m in per_query[n]) for n in MANAGERS)
    print(
        f"\nthrough the FileSystem API: {slow / fast:.1f}x faster per file, a batch "
        f"{long / short:.1f}x shorter (medians)"
    )
    spark.stop()


if __name__ == "__main__":
    main()
