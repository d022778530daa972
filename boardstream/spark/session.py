"""A SparkSession with the Kafka connector on its classpath and boardstream's defaults.

The connector jars come from ``var/jars/spark-kafka`` (fetched once by ``boardstream setup``),
so starting a job never downloads anything. Python workers use this interpreter, so the venv's
pandas and pyarrow are the ones the state functions run with.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from boardstream.settings import Settings
from boardstream.stack import jars


def spark_session(settings: Settings, app_name: str, master: str | None = None) -> SparkSession:
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
    # Under spark-submit (which exports SPARK_ENV_LOADED) its --master wins; otherwise local.
    if master or not os.environ.get("SPARK_ENV_LOADED"):
        builder = builder.master(master or settings.spark_master)
    return builder.getOrCreate()
