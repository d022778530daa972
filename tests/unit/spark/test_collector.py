"""The JVMs' collector (boardstream/spark/collector.py): the parallel one for the driver and the
executors, beside their other options, unless the options given already choose one (a JVM
refuses two). A real driver on it: tests/integration/test_collector.py."""

from __future__ import annotations

import pytest

from boardstream.spark.class_archive import DRIVER_OPTIONS
from boardstream.spark.collector import EXECUTOR_OPTIONS, PARALLEL, with_collector


def test_the_driver_and_the_executors_get_the_parallel_collector_beside_their_options() -> None:
    conf = {DRIVER_OPTIONS: "-Dx=1", "spark.app.name": "a"}
    assert with_collector(conf, environ={}) == {
        DRIVER_OPTIONS: f"-Dx=1 {PARALLEL}",
        EXECUTOR_OPTIONS: PARALLEL,
        "spark.app.name": "a",
    }
    assert conf == {DRIVER_OPTIONS: "-Dx=1", "spark.app.name": "a"}  # not changed in place


@pytest.mark.parametrize(
    ("key", "chosen"),
    [
        ("spark.driver.extraJavaOptions", "-Xss4m -XX:+UseG1GC"),
        (DRIVER_OPTIONS, "-XX:+UseZGC"),
        ("spark.driver.extraJavaOptions", "-XX:+UseParallelGC"),
    ],
)
def test_a_collector_chosen_for_the_driver_is_kept(key: str, chosen: str) -> None:
    options = with_collector({key: chosen}, environ={})
    assert options.get(DRIVER_OPTIONS, "").count("GC") == (1 if key == DRIVER_OPTIONS else 0)
    assert options[key] == chosen
    assert options[EXECUTOR_OPTIONS] == PARALLEL  # the executors' JVMs are others


def test_a_collector_chosen_for_the_executors_is_kept() -> None:
    options = with_collector({"spark.executor.extraJavaOptions": "-XX:+UseSerialGC"}, environ={})
    assert EXECUTOR_OPTIONS not in options
    assert options[DRIVER_OPTIONS] == PARALLEL


def test_an_option_that_only_mentions_gc_chooses_nothing() -> None:
    given = "-Xlog:gc -XX:+PrintGCDetails -XX:+UseGCOverheadLimit"
    assert (
        with_collector({DRIVER_OPTIONS: given}, environ={})[DRIVER_OPTIONS] == f"{given} {PARALLEL}"
    )


@pytest.mark.parametrize("variable", ["SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"])
def test_a_collector_chosen_in_the_drivers_environment_is_kept(variable: str) -> None:
    options = with_collector({}, environ={variable: "-XX:+UseG1GC"})
    assert DRIVER_OPTIONS not in options
    assert options[EXECUTOR_OPTIONS] == PARALLEL
    assert with_collector({}, environ={variable: "-Xlog:gc"})[DRIVER_OPTIONS] == PARALLEL
