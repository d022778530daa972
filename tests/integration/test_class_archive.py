"""The drivers' class archive that ``boardstream setup`` (run by bin/setup) built maps into a
real driver started as every job is (on the parallel collector, :mod:`boardstream.spark.collector`):
with ``-Xshare:on`` a JVM that cannot map it refuses to start, so the run's exit code is the
proof; a driver on another class path is refused it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from boardstream.spark import class_archive, collector, jvm_options
from boardstream.spark.submit import run_env, spark_submit, submit_conf
from tests.fixtures import isolated_settings


def warm_up(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    settings = isolated_settings(tmp_path / "var")
    conf = jvm_options.configure(submit_conf(console=False), settings.jars_dir)
    assert collector.PARALLEL in conf[class_archive.DRIVER_OPTIONS]
    assert (
        f"-XX:SharedArchiveFile={class_archive.current_archive(settings.jars_dir)}"
        in (conf[class_archive.DRIVER_OPTIONS])
    ), "bin/setup builds the archive (boardstream setup)"
    work = tmp_path / "work"
    work.mkdir()
    command = [
        *spark_submit(settings, "archive-test", conf),
        "--conf",
        "spark.driver.extraJavaOptions=-Xshare:on",  # no archive mapped: no JVM
        *extra,
        str(class_archive.WARM_UP),
        str(work),
    ]
    return subprocess.run(
        command, env=run_env(settings), capture_output=True, text=True, timeout=300
    )


def test_a_driver_maps_the_archive_setup_built(tmp_path: Path) -> None:
    done = warm_up(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "shared archive" not in done.stdout + done.stderr


def test_a_driver_on_another_class_path_is_refused_it(tmp_path: Path) -> None:
    done = warm_up(tmp_path, "--driver-class-path", str(tmp_path))
    assert done.returncode != 0
    assert "Unable to use shared archive" in done.stdout + done.stderr
