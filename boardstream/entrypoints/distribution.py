"""``python -m boardstream.entrypoints.distribution``: the one-line verdict of
:func:`boardstream.spark.distribution.require`, exit 1 with the fix when the pyspark package and
its jars differ (``bin/setup`` and the Dockerfile run it)."""

from __future__ import annotations

import sys

from boardstream.errors import BoardstreamError
from boardstream.spark.distribution import jar_versions, require


def main() -> int:
    try:
        home = require()
    except BoardstreamError as error:
        print(f"boardstream: error: {error}", file=sys.stderr)
        return 1
    versions = ", ".join(sorted(jar_versions(home)))
    print(f"pyspark {versions}: Python package and Spark jars agree ({home})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
