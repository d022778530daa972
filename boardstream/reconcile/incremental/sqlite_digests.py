"""SQLite's row and bucket digests (#22): Python functions registered on a connection, and the
bucket digests of a database file folded in a process of their own.

SQLite has no hash function, so each row's digest is a Python call (:mod:`.table_buckets`
defines what is hashed). Each call needs the interpreter's lock. In a thread beside a driver
that holds that lock (py4j calls, Arrow, pandas), every row waited for it: an incremental run's
bucket digests took 3.0-3.9 s instead of 2.1-2.3 s alone (docs/BENCHMARKS.md). A process of
its own has its own lock. It is started from a fresh interpreter, not forked: a forked child
would inherit SQLite's in-process bookkeeping of the driver's open connections and their locks,
which SQLite forbids using across ``fork()``. Standard library only, so that interpreter starts
in milliseconds.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import struct
import subprocess
import sys
from typing import Any

NULL_BUCKET = -1  # the rows without an id
MASK_64 = 2**64 - 1  # a signed 64-bit digest as the unsigned row digest
DIGEST = "boardstream_digest64"
BUCKET = "boardstream_bucket"
BUCKET_DIGESTS = "boardstream_bucket_digests"
_SIGNED_64 = struct.Struct(">q")
_UNSIGNED_32 = struct.Struct(">I")
_MODULE = "boardstream.entrypoints.sqlite_fold"
OPERATIONAL_ERROR = 3  # the entry point's exit code when SQLite refused the statement


def digest64(canonical: bytes | None) -> int | None:
    """The first 64 bits of SHA-256, as SQLite's signed 64-bit integer."""
    if canonical is None:
        return None
    return _SIGNED_64.unpack_from(hashlib.sha256(canonical).digest())[0]


def bucket_of_bytes(record_id: bytes, buckets: int) -> int:
    """The first 32 bits of SHA-256 of the id's bytes, unsigned, modulo ``buckets``."""
    return _UNSIGNED_32.unpack_from(hashlib.sha256(record_id).digest())[0] % buckets


def _bucket(record_id: bytes | None, buckets: int) -> int | None:
    """:func:`bucket_of_bytes` as an SQL function: NULL for NULL."""
    return None if record_id is None else bucket_of_bytes(record_id, buckets)


def register(dbapi_connection: Any, buckets: int | None = None) -> None:
    """The digest and the bucket as deterministic SQL functions on this SQLite connection
    (registering again replaces them: cheap, and no engine-wide listener to install); with
    ``buckets``, the aggregate that folds rows into that many buckets too."""
    dbapi_connection.create_function(DIGEST, 1, digest64, deterministic=True)
    dbapi_connection.create_function(BUCKET, 2, _bucket, deterministic=True)
    if buckets is not None:
        dbapi_connection.create_aggregate(BUCKET_DIGESTS, 2, _bucket_folder(buckets))


def _bucket_folder(buckets: int) -> type:
    """SQLite aggregate class: each row's bucket and digest, folded into per-bucket row counts
    and exact digest sums, as JSON ``[[bucket, rows, sum], ...]`` (sums beyond 64 bits)."""

    class BucketFolder:
        def __init__(self) -> None:
            self.folded: dict[int, list[int]] = {}

        def step(self, record_id: bytes | None, canonical: bytes) -> None:
            bucket = NULL_BUCKET if record_id is None else bucket_of_bytes(record_id, buckets)
            digest = digest64(canonical) & MASK_64  # the row digest, as rows are read
            totals = self.folded.get(bucket)
            if totals is None:
                self.folded[bucket] = [1, digest]
            else:
                totals[0] += 1
                totals[1] += digest

        def finalize(self) -> str:
            return json.dumps([[bucket, n, total] for bucket, (n, total) in self.folded.items()])

    return BucketFolder


def fold(dbapi_connection: Any, query: str, params: dict[str, str], buckets: int) -> str | None:
    """The folded JSON of ``query`` (one call of :data:`BUCKET_DIGESTS`), None for no row."""
    register(dbapi_connection, buckets)
    return dbapi_connection.execute(query, params).fetchone()[0]


def fold_file(path: str, query: str, params: dict[str, str], buckets: int) -> str | None:
    """:func:`fold` on a connection of its own to the database file ``path``, read only."""
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA query_only = 1")
        return fold(connection, query, params, buckets)
    finally:
        connection.close()


def fold_apart(path: str, query: str, params: dict[str, str], buckets: int) -> str | None:
    """:func:`fold_file` in a new interpreter, running the entry point
    ``python -m boardstream.entrypoints.sqlite_fold`` (importable wherever this package is).
    SQLite's refusal of the statement is raised here as the same ``sqlite3.OperationalError``;
    any other failure of the process as a RuntimeError with its error output."""
    request = {"path": path, "query": query, "params": params, "buckets": buckets}
    done = subprocess.run(
        [sys.executable, "-m", _MODULE],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0:
        return json.loads(done.stdout)["folded"]
    if done.returncode == OPERATIONAL_ERROR:
        raise sqlite3.OperationalError(json.loads(done.stdout)["error"])
    raise RuntimeError(
        f"the bucket digests' process ({_MODULE}) exited with {done.returncode}: "
        f"{done.stderr.strip()[-2000:]}"
    )
