"""A SparkSession with the Kafka connector on its classpath and boardstream's defaults.

The connector jars come from ``var/jars/spark-kafka`` (fetched once by ``boardstream setup``),
so starting a job never downloads anything. Python workers use this interpreter, so the venv's
pandas and pyarrow are the ones the state functions run with. Spark logs at WARN (see
:mod:`boardstream.logs`); progress bars are drawn only on a terminal.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from boardstream import logs
from boardstream.settings import Settings
from boardstream.stack import jars


def spark_session(
    settings: Settings, app_name: str, master: str | None = None, progress: bool = True
) -> SparkSession:
    """``progress=False`` for a command whose output is a table: no progress bars between its
    lines even on a terminal."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    connector = jars.require(jars.SPARK_KAFKA, settings.jars_dir)
    builder = (
        SparkSession.builder.appName(app_name)
        .config("spark.jars", ",".join(str(jar) for jar in connector))
        .config("spark.driver.memory", settings.spark_driver_memory)
        .config("spark.sql.shuffle.partitions", str(settings.partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        # base64() would break a dead letter's original bytes into 76-character MIME lines.
        .config("spark.sql.chunkBase64String.enabled", "false")
    )
    # Under spark-submit (which exports SPARK_ENV_LOADED) its --master wins, and its JVM, already
    # running, was given boardstream's logging; otherwise this session starts the JVM.
    under_submit = bool(os.environ.get("SPARK_ENV_LOADED"))
    if master or not under_submit:
        builder = builder.master(master or settings.spark_master)
    if not under_submit:
        for name, value in logs.spark_conf(console=progress and sys.stderr.isatty()).items():
            builder = builder.config(name, value)
    return builder.getOrCreate()
