"""Bytecode in a source-only archive: imported from it, never run stale, added once."""

from __future__ import annotations

import importlib
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardstream.spark import python_zip


def archive_of(path: Path, members: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return path


@pytest.fixture
def imported(tmp_path: Path) -> Iterator[object]:
    """Import ``zpkg`` from an archive given by the test, then forget it."""

    def load(archive: Path) -> object:
        sys.path.insert(0, str(archive))
        try:
            return importlib.import_module("zpkg.values")
        finally:
            sys.path.remove(str(archive))
            sys.path_importer_cache.pop(str(archive), None)

    yield load
    for name in ("zpkg", "zpkg.values"):
        sys.modules.pop(name, None)


def test_each_source_gets_bytecode_that_import_uses(tmp_path: Path, imported) -> None:
    archive = archive_of(
        tmp_path / "pkg.zip",
        {
            "zpkg/__init__.py": "",
            "zpkg/values.py": "VALUE = 1\n",
            "zpkg/tests/test_it.py": "x = (1 is 1)\n",  # never compiled: no worker imports it
            "zpkg/data.json": "{}",
        },
    )
    assert python_zip.sources_without_bytecode(archive) == ["zpkg/__init__.py", "zpkg/values.py"]
    assert python_zip.add_bytecode(archive) == 2
    with zipfile.ZipFile(archive) as result:
        names = sorted(result.namelist())
        assert result.read("zpkg/data.json") == b"{}"  # other members kept as they were
    assert names == sorted(
        [
            "zpkg/__init__.py",
            "zpkg/__init__.pyc",
            "zpkg/values.py",
            "zpkg/values.pyc",
            "zpkg/tests/test_it.py",
            "zpkg/data.json",
        ]
    )
    module = imported(archive)
    assert (module.VALUE, module.__file__) == (1, f"{archive}/zpkg/values.pyc")
    assert python_zip.add_bytecode(archive) == 0  # once is enough


def test_bytecode_whose_source_changed_is_not_run(tmp_path: Path, imported) -> None:
    """A new pyspark.zip whose sources changed under an old ``.pyc``: the source wins. Bytecode
    checked by timestamp (zip times are local and 2 s coarse) or not checked at all would run
    the old code."""
    first = archive_of(
        tmp_path / "old.zip", {"zpkg/__init__.py": "", "zpkg/values.py": "VALUE = 1\n"}
    )
    python_zip.add_bytecode(first)
    with zipfile.ZipFile(first) as old:
        stale = {name: old.read(name) for name in old.namelist() if name.endswith(".pyc")}
    changed = archive_of(
        tmp_path / "new.zip",
        {"zpkg/__init__.py": "", "zpkg/values.py": "VALUE = 2\n", **stale},
    )
    assert imported(changed).VALUE == 2


def test_the_archive_is_replaced_not_rewritten_in_place(tmp_path: Path) -> None:
    """An installer may hard-link the archive into its cache: that copy stays as it was."""
    archive = archive_of(tmp_path / "pkg.zip", {"zpkg/__init__.py": "A = 1\n"})
    cached = tmp_path / "cache.zip"
    cached.hardlink_to(archive)
    before = cached.read_bytes()
    python_zip.add_bytecode(archive)
    assert cached.read_bytes() == before
    assert archive.read_bytes() != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache.zip", "pkg.zip"]  # no leftovers


def test_archives_are_those_spark_puts_on_the_workers_path(tmp_path: Path) -> None:
    lib = tmp_path / "python" / "lib"
    lib.mkdir(parents=True)
    for name in ("pyspark.zip", "py4j-0.10.9.9-src.zip", "README"):
        (lib / name).write_bytes(b"")
    assert python_zip.archives(tmp_path) == [lib / "py4j-0.10.9.9-src.zip", lib / "pyspark.zip"]
