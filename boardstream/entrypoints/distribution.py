"""``python -m boardstream.entrypoints.distribution``: the one-line verdict of
:func:`boardstream.spark.distribution.require`, exit 1 with the fix when the pyspark package and
its jars differ; then bytecode into the archives Spark's Python workers import pyspark from
(:mod:`boardstream.spark.python_zip`). ``bin/setup`` and the Dockerfile run it."""

from __future__ import annotations

import sys

from boardstream.errors import BoardstreamError
from boardstream.spark import python_zip
from boardstream.spark.distribution import jar_versions, require


def main() -> int:
    try:
        home = require()
    except BoardstreamError as error:
        print(f"boardstream: error: {error}", file=sys.stderr)
        return 1
    versions = ", ".join(sorted(jar_versions(home)))
    print(f"pyspark {versions}: Python package and Spark jars agree ({home})")
    for archive in python_zip.archives(home):
        try:
            added = python_zip.add_bytecode(archive)
        except OSError as error:
            # A read-only install still runs: its workers compile pyspark at each start.
            print(f"boardstream: warning: no bytecode added to {archive}: {error}", file=sys.stderr)
            continue
        print(
            f"{archive.name}: bytecode for {added} modules added"
            if added
            else f"{archive.name}: bytecode in place"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
