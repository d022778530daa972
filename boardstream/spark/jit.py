"""The driver JVM's JIT for a run of a few seconds (an incremental reconciliation).

C2, the JIT's optimizing compiler, pays off over a long run through much data, not over a few
seconds of planning and small jobs: its threads took 3-7 of a cold incremental run's
CPU-seconds on two cores. With C1 alone such a run took 6.8-7.0 s instead of 8.3-9.2 s; a full
run took 90-93 s instead of 74 s, so only short-lived drivers get it (docs/BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from boardstream.spark.class_archive import DRIVER_OPTIONS

SHORT_LIVED_JIT = "-XX:TieredStopAtLevel=1"


def short_lived(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` with the driver's JVM compiling with C1 only, beside its other options."""
    options = " ".join(filter(None, [conf.get(DRIVER_OPTIONS), SHORT_LIVED_JIT]))
    return {**conf, DRIVER_OPTIONS: options}
