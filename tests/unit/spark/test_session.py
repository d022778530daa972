"""A session's options: the jars from the local cache, RocksDB state with changelog
checkpoints, UTC, the shuffle as wide as the topics; whose master wins (the caller's, else the
settings' unless spark-submit chose one); boardstream's logging only where no spark-submit set
it up, with progress bars only on a console."""

from __future__ import annotations

from pathlib import Path

import pytest

from boardstream.logs import spark_conf
from boardstream.spark.class_archive import DRIVER_OPTIONS, with_archive
from boardstream.spark.collector import DRIVER_ENVIRONMENT, EXECUTOR_OPTIONS, PARALLEL
from boardstream.spark.jit import SHORT_LIVED_JIT
from boardstream.spark.session import CHECKPOINT_FILES, session_options
from boardstream.stack import jars
from tests.fixtures import isolated_settings


@pytest.fixture(autouse=True)
def no_collector_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in DRIVER_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def test_a_session_of_its_own_gets_the_settings_master_and_boardstream_logging(
    tmp_path: Path,
) -> None:
    settings = isolated_settings(tmp_path, partitions=5, spark_master="local[3]")
    options = session_options(settings, "app", None, under_submit=False, console=False)
    classpath = ",".join(str(jar) for jar in jars.spark_classpath(settings.jars_dir))
    logging = spark_conf(console=False)
    assert options == {
        "spark.app.name": "app",
        "spark.jars": classpath,
        "spark.driver.memory": settings.spark_driver_memory,
        "spark.sql.shuffle.partitions": "5",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.chunkBase64String.enabled": "false",
        "spark.sql.streaming.checkpointFileManagerClass": CHECKPOINT_FILES,
        "spark.hadoop.dfs.client.retry.policy.enabled": "true",
        "spark.hadoop.dfs.client.retry.policy.spec": "2000,30",
        "spark.master": "local[3]",
        # The parallel collector for both (tests/unit/spark/test_collector.py), and the class
        # archive's option too, when setup built one (tests/unit/spark/test_class_archive.py).
        **with_archive(
            {
                **logging,
                DRIVER_OPTIONS: f"{logging[DRIVER_OPTIONS]} {PARALLEL}",
                EXECUTOR_OPTIONS: f"{logging[EXECUTOR_OPTIONS]} {PARALLEL}",
            },
            settings.jars_dir,
        ),
    }
    assert "boardstream-jvm.jar" in classpath and "spark-sql-kafka" in classpath


def test_an_event_log_dir_turns_the_event_log_on_there(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, spark_event_log_dir="hdfs://nn:8020/events/")
    options = session_options(settings, "app", None, under_submit=True, console=False)
    assert options["spark.eventLog.enabled"] == "true"
    assert options["spark.eventLog.dir"] == "hdfs://nn:8020/events"
    default = session_options(isolated_settings(tmp_path), "app", None, True, False)
    assert not any(key.startswith("spark.eventLog") for key in default)


def test_hdfs_files_get_the_replication_set_else_hadoops(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, hdfs_replication=1)
    options = session_options(settings, "app", None, under_submit=True, console=False)
    assert options["spark.hadoop.dfs.replication"] == "1"
    default = session_options(isolated_settings(tmp_path), "app", None, True, False)
    assert "spark.hadoop.dfs.replication" not in default


def test_the_callers_master_wins_and_a_console_draws_progress(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, spark_master="local[3]")
    options = session_options(settings, "app", "local[1]", under_submit=False, console=True)
    assert options["spark.master"] == "local[1]"
    assert options["spark.ui.showConsoleProgress"] == "true"


def test_under_spark_submit_its_master_and_logging_stay(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, spark_master="local[3]")
    options = session_options(settings, "app", None, under_submit=True, console=False)
    assert "spark.master" not in options
    assert not set(spark_conf(console=False)) & set(options)
    given = session_options(settings, "app", "local[1]", under_submit=True, console=False)
    assert given["spark.master"] == "local[1]"


def test_a_short_lived_driver_compiles_with_c1_only_beside_its_other_options(
    tmp_path: Path,
) -> None:
    settings = isolated_settings(tmp_path)
    usual = session_options(settings, "app", None, under_submit=False, console=False)
    brief = session_options(
        settings, "app", None, under_submit=False, console=False, short_lived=True
    )
    driver = "spark.driver.defaultJavaOptions"
    assert SHORT_LIVED_JIT == "-XX:TieredStopAtLevel=1"
    assert SHORT_LIVED_JIT not in usual[driver]
    assert brief[driver].split() == [
        *spark_conf(console=False)[driver].split(),
        PARALLEL,
        SHORT_LIVED_JIT,
        *usual[driver].split()[3:],  # the class archive, when setup built one
    ]
    assert {k: v for k, v in brief.items() if k != driver} == {
        k: v for k, v in usual.items() if k != driver
    }
    # spark-submit started the JVM already: nothing to give it.
    submitted = session_options(
        settings, "app", None, under_submit=True, console=False, short_lived=True
    )
    assert driver not in submitted
