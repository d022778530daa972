"""The pyspark Python package and its jars must be one Spark version, else setup and spark-submit
refuse with the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from boardstream.errors import BoardstreamError
from boardstream.spark import distribution, python_zip
from boardstream.spark.submit import spark_home


def fake_home(tmp_path: Path, *jars: str) -> Path:
    """A pyspark directory with only what the check reads: the names under jars/."""
    home = tmp_path / "pyspark"
    (home / "jars").mkdir(parents=True)
    for name in ["scala-library-2.13.16.jar", "spark-sql_2.13-4.3.0.jar", *jars]:
        (home / "jars" / name).write_bytes(b"")
    return home


def test_matching_versions_pass(tmp_path: Path) -> None:
    home = fake_home(tmp_path, "spark-core_2.13-4.3.0.jar")
    assert distribution.jar_versions(home) == {"4.3.0"}
    distribution.check("4.3.0", home)


def test_client_python_over_full_jars_is_refused_with_the_fix(tmp_path: Path) -> None:
    home = fake_home(tmp_path, "spark-core_2.13-4.3.0.jar")
    with pytest.raises(BoardstreamError) as error:
        distribution.check("4.2.0", home)
    assert str(error.value) == (
        f"pyspark 4.2.0 (Python package) does not match the Spark jars (spark-core 4.3.0) in "
        f"{home}: reinstall with bin/setup "
        "(uv pip sync --reinstall --require-hashes requirements.lock)"
    )


def test_two_spark_cores_are_refused(tmp_path: Path) -> None:
    home = fake_home(tmp_path, "spark-core_2.13-4.2.0.jar", "spark-core_2.13-4.3.0.jar")
    with pytest.raises(BoardstreamError, match=r"\(spark-core 4\.2\.0, 4\.3\.0\)"):
        distribution.check("4.3.0", home)


def test_no_jars_at_all_is_refused(tmp_path: Path) -> None:
    """pyspark-client alone has no jars: no spark-submit could run."""
    home = tmp_path / "pyspark"
    home.mkdir()
    with pytest.raises(BoardstreamError, match=r"\(spark-core none\)"):
        distribution.check("4.3.0", home)


def test_the_installed_venv_is_one_distribution() -> None:
    home = Path(pyspark.__file__).parent
    assert distribution.jar_versions(home) == {pyspark.__version__}
    assert spark_home() == home
    result = subprocess.run(
        [sys.executable, "-m", "boardstream.entrypoints.distribution"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, "")
    # bin/setup ran it before: the workers' archives already hold their bytecode.
    in_place = "".join(f"{a.name}: bytecode in place\n" for a in python_zip.archives(home))
    assert in_place.count("\n") == 2  # pyspark's and py4j's
    assert result.stdout == (
        f"pyspark {pyspark.__version__}: Python package and Spark jars agree ({home})\n" + in_place
    )
