"""Bytecode inside ``pyspark.zip``, so Spark's Python workers start in a fraction of the CPU.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on every Python worker's path
(``PythonUtils.sparkPythonPath``), so workers import pyspark from it, not from site-packages.
The archive holds sources only, and Python never writes bytecode into an archive: each worker
compiled pyspark again (1.4 s of CPU here against 0.35 s with bytecode). The process Spark
starts for a ``transformWithStateInPandas`` query's first batch has a fixed 10 s to connect
back; on a machine held at load it took 11-24 s and the query failed (issue #47).

Each ``.py`` gets a checked-hash ``.pyc`` beside it in the archive (PEP 552): ``zipimport``
uses it while its source in the archive hashes the same, and compiles the source otherwise, so
a stale ``.pyc`` cannot run. The archive is rewritten to a new file and renamed over the old
one (an installer's hard link into its cache keeps the original).
"""

from __future__ import annotations

import logging
import os
import py_compile
import tempfile
import warnings
import zipfile
from pathlib import Path

logger = logging.getLogger(__name__)


def archives(spark_home: Path) -> list[Path]:
    """The archives Spark puts on its workers' path: pyspark's and py4j's."""
    return sorted((spark_home / "python" / "lib").glob("*.zip"))


def sources_without_bytecode(archive: Path) -> list[str]:
    """The ``.py`` members of ``archive`` without a ``.pyc`` beside them, except pyspark's own
    test suites (no worker imports them)."""
    with zipfile.ZipFile(archive) as zip_file:
        names = set(zip_file.namelist())
    return sorted(
        name
        for name in names
        if name.endswith(".py") and name + "c" not in names and "/tests/" not in name
    )


def checked_hash_pyc(source: bytes, filename: str) -> bytes:
    """The checked-hash ``.pyc`` of ``source``, naming ``filename`` in tracebacks."""
    with tempfile.TemporaryDirectory() as scratch, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the library's own style warnings (SyntaxWarning)
        module, compiled = Path(scratch, "module.py"), Path(scratch, "module.pyc")
        module.write_bytes(source)
        mode = py_compile.PycInvalidationMode.CHECKED_HASH
        py_compile.compile(
            str(module), str(compiled), filename, doraise=True, invalidation_mode=mode
        )
        return compiled.read_bytes()


def add_bytecode(archive: Path) -> int:
    """Add a ``.pyc`` for each source of ``archive`` that lacks one; how many were added."""
    missing = sources_without_bytecode(archive)
    if not missing:
        return 0
    logger.info("compiling %d modules into %s", len(missing), archive)
    descriptor, temporary = tempfile.mkstemp(dir=archive.parent, suffix=".zip.tmp")
    os.close(descriptor)
    try:
        with (
            zipfile.ZipFile(archive) as source_zip,
            zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as target,
        ):
            # Writing a member updates its ZipInfo's offsets: compile before copying.
            compiled = {
                name: checked_hash_pyc(source_zip.read(name), f"{archive}/{name}")
                for name in missing
            }
            for member in source_zip.infolist():
                target.writestr(member, source_zip.read(member))
            for name, pyc in compiled.items():
                info = zipfile.ZipInfo(name + "c", source_zip.getinfo(name).date_time)
                target.writestr(info, pyc, zipfile.ZIP_DEFLATED)
        os.chmod(temporary, archive.stat().st_mode)
        os.replace(temporary, archive)
    finally:
        Path(temporary).unlink(missing_ok=True)
    return len(missing)
