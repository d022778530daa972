"""``python -m boardstream.entrypoints.distribution``: one line and exit 0 when the pyspark
package and its jars agree, the refusal (with the fix) on stderr and exit 1 when they do not.
The check itself is pinned in tests/unit/spark/test_distribution.py."""

from __future__ import annotations

import zipfile
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


def test_bytecode_is_added_to_the_workers_archives_once(monkeypatch, capsys, tmp_path) -> None:
    home = tmp_path / "pyspark"
    lib = home / "python" / "lib"
    lib.mkdir(parents=True)
    with zipfile.ZipFile(lib / "pyspark.zip", "w") as archive:
        archive.writestr("pyspark/__init__.py", "")
        archive.writestr("pyspark/sql.py", "X = 1\n")
    monkeypatch.setattr(distribution, "require", lambda: home)
    assert distribution.main() == 0
    assert capsys.readouterr().out.splitlines()[1:] == ["pyspark.zip: bytecode for 2 modules added"]
    assert distribution.main() == 0
    assert capsys.readouterr().out.splitlines()[1:] == ["pyspark.zip: bytecode in place"]


def test_an_archive_it_cannot_write_is_a_warning(monkeypatch, capsys, tmp_path) -> None:
    """A read-only install still runs Spark; its workers compile pyspark at each start."""
    home = tmp_path / "pyspark"
    (home / "python" / "lib").mkdir(parents=True)
    (home / "python" / "lib" / "pyspark.zip").write_bytes(b"")

    def read_only(archive: Path) -> int:
        raise PermissionError(13, "Permission denied", str(archive))

    monkeypatch.setattr(distribution, "require", lambda: home)
    monkeypatch.setattr(distribution.python_zip, "add_bytecode", read_only)
    assert distribution.main() == 0
    archive = home / "python" / "lib" / "pyspark.zip"
    assert capsys.readouterr().err == (
        f"boardstream: warning: no bytecode added to {archive}: "
        f"[Errno 13] Permission denied: '{archive}'\n"
    )
