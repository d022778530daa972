"""One Spark distribution: the pyspark Python package must be the version of the jars beside it.

Two wheels (pyspark and pyspark-client) both write ``site-packages/pyspark/``; when install order
let the client's Python files win, the driver ran 4.2 Python against 4.3 jars and Python UDFs
failed at run time. Setup and every spark-submit check it first and refuse with the fix.

``python -m boardstream.entrypoints.distribution`` runs the check (``bin/setup`` calls it).
"""

from __future__ import annotations

import re
from pathlib import Path

from boardstream.errors import BoardstreamError

FIX = "reinstall with bin/setup (uv pip sync --reinstall --require-hashes requirements.lock)"
_CORE_JAR = re.compile(r"spark-core_[0-9.]+-(?P<version>.+)\.jar")


def jar_versions(home: Path) -> set[str]:
    """Versions in the names of the Spark core jars under ``home/jars`` (one when intact)."""
    jars_dir = home / "jars"
    names = [path.name for path in jars_dir.glob("spark-core_*.jar")] if jars_dir.is_dir() else []
    return {match["version"] for name in names if (match := _CORE_JAR.fullmatch(name))}


def check(python_version: str, home: Path) -> None:
    """Raise, naming both versions and the fix, unless ``home``'s jars are ``python_version``."""
    found = jar_versions(home)
    if found == {python_version}:
        return
    jars = ", ".join(sorted(found)) if found else "none"
    raise BoardstreamError(
        f"pyspark {python_version} (Python package) does not match the Spark jars "
        f"(spark-core {jars}) in {home}: {FIX}"
    )


def require() -> Path:
    """The installed pyspark's directory (its SPARK_HOME), once its Python and jars agree."""
    try:
        import pyspark
    except ImportError as error:
        raise BoardstreamError(f"pyspark cannot be imported ({error}): {FIX}") from None
    home = Path(pyspark.__file__).parent
    check(pyspark.__version__, home)
    return home
