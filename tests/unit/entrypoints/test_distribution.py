"""``python -m boardstream.entrypoints.distribution``: one line and exit 0 when the pyspark
package and its jars agree, the refusal (with the fix) on stderr and exit 1 when they do not.
The check itself is pinned in tests/unit/spark/test_distribution.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from boardstream.entrypoints import distribution
from boardstream.errors import BoardstreamError


def test_agreeing_versions_are_one_line(monkeypatch, capsys, tmp_path: Path) -> None:
    home = tmp_path / "pyspark"
    (home / "jars").mkdir(parents=True)
    (home / "jars" / "spark-core_2.13-5.0.0-preview1.jar").write_bytes(b"")
    monkeypatch.setattr(distribution, "require", lambda: home)
    assert distribution.main() == 0
    assert capsys.readouterr() == (
        f"pyspark 5.0.0-preview1: Python package and Spark jars agree ({home})\n",
        "",
    )


def test_a_mismatch_is_the_error_and_exit_1(monkeypatch, capsys) -> None:
    def require() -> Path:
        raise BoardstreamError("pyspark 4.2.0 does not match: reinstall")

    monkeypatch.setattr(distribution, "require", require)
    assert distribution.main() == 1
    assert capsys.readouterr() == (
        "",
        "boardstream: error: pyspark 4.2.0 does not match: reinstall\n",
    )


def test_other_errors_are_not_swallowed(monkeypatch) -> None:
    monkeypatch.setattr(distribution, "require", lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        distribution.main()
