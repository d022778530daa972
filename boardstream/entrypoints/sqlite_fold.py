"""The process :func:`boardstream.reconcile.incremental.sqlite_digests.fold_apart` starts: one
request as JSON on stdin (path, query, params, buckets), the folded bucket digests as JSON on
stdout. Exit 0 when done;
:data:`~boardstream.reconcile.incremental.sqlite_digests.OPERATIONAL_ERROR` with SQLite's refusal
on stdout; a traceback and 1 for anything else. Standard library only."""

from __future__ import annotations

import json
import sqlite3
import sys

from boardstream.reconcile.incremental.sqlite_digests import OPERATIONAL_ERROR, fold_file


def main() -> int:
    request = json.load(sys.stdin)
    try:
        folded = fold_file(request["path"], request["query"], request["params"], request["buckets"])
    except sqlite3.OperationalError as error:
        json.dump({"error": str(error)}, sys.stdout)
        return OPERATIONAL_ERROR
    json.dump({"folded": folded}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
