"""The options boardstream gives the JVMs it starts for Spark, composed in one place for every
spark-submit (the CLI's, the Airflow operator's) and every session that starts its own JVM."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from boardstream.spark import class_archive, collector, jit


def configure(
    conf: Mapping[str, str],
    jars_dir: Path,
    short_lived: bool = False,
    environ: Mapping[str, str] = os.environ,
) -> dict[str, str]:
    """``conf`` with the parallel collector (:mod:`.collector`; unless ``conf`` or ``environ``,
    the environment the JVM will start in, chooses one), C1 only for a ``short_lived`` driver
    (:mod:`.jit`) and the drivers' class archive when one was built (:mod:`.class_archive`)."""
    options = collector.with_collector(conf, environ)
    if short_lived:
        options = jit.short_lived(options)
    return class_archive.with_archive(options, jars_dir)
