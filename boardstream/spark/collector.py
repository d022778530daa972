"""The garbage collector of the JVMs boardstream starts for Spark: the throughput collector.

Java 17 picks G1, which keeps pauses short by doing part of its work beside the application:
concurrent marking threads and write barriers on every reference store. On two cores shared with
the broker that work comes out of the tasks' time. With the parallel collector the join drained a
production-scale backlog in 36.6-38.6 s against 40.3-43.9 s, its output phase 15-20 % faster,
alternating in one sitting (docs/BENCHMARKS.md, "The drivers' garbage collector"). State lives
off the heap (RocksDB), so the heap holds a batch's rows, which die young: the parallel
collector's pauses stay short. A collector chosen elsewhere (``-XX:+Use...GC`` in the Spark
options given, or for the driver in the environment a JVM reads its options from) is kept: a JVM
given two refuses to start ("Multiple garbage collectors selected").
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from boardstream.spark.class_archive import DRIVER_OPTIONS

EXECUTOR_OPTIONS = "spark.executor.defaultJavaOptions"
PARALLEL = "-XX:+UseParallelGC"
_CHOSEN = re.compile(r"-XX:\+Use\w*GC\b")
# Where else a JVM's options come from, beside the defaults this module extends.
_OTHER_OPTIONS = {
    DRIVER_OPTIONS: "spark.driver.extraJavaOptions",
    EXECUTOR_OPTIONS: "spark.executor.extraJavaOptions",
}
# The environment spark-submit's JVM (the driver, in client and local mode) reads options from.
DRIVER_ENVIRONMENT = ("SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS")


def with_collector(
    conf: Mapping[str, str], environ: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """``conf`` with the driver's and the executors' JVMs on the parallel collector, each
    unless its options in ``conf`` (and for the driver in ``environ``) already choose one."""
    options = dict(conf)
    driver_environment = " ".join(environ.get(name, "") for name in DRIVER_ENVIRONMENT)
    for defaults, extra in _OTHER_OPTIONS.items():
        given = f"{conf.get(defaults, '')} {conf.get(extra, '')}"
        if defaults == DRIVER_OPTIONS:
            given += f" {driver_environment}"
        if not _CHOSEN.search(given):
            options[defaults] = " ".join(filter(None, [conf.get(defaults), PARALLEL]))
    return options
