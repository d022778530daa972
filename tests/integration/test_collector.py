"""A session that starts its own JVM (as the suite's does, as a job's driver does under
spark-submit with the same options) runs the parallel collector (boardstream/spark/collector.py):
the JVM's own garbage collector beans say which collector it runs."""

from __future__ import annotations

from pyspark.sql import SparkSession


def test_the_driver_runs_the_parallel_collector(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    beans = jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = sorted(str(bean.getName()) for bean in beans)
    assert names == ["PS MarkSweep", "PS Scavenge"]
