"""Checkpoint files read outside Spark, verified as Hadoop verifies them.

Spark writes a local checkpoint through Hadoop's checksummed file system: beside each file ``F``,
``.F.crc`` holds ``crc\\0``, the bytes per checksum (a big-endian int) and one CRC-32 per chunk of
``F``. Spark checks it on read, so a file altered on disk errors the query. The reconciliation
reads the jobs' offset logs itself (:mod:`boardstream.reconcile.reads.snapshot`); it checks them
the same way, so an altered entry cannot pass as a job's progress. As in Hadoop, a file without a
checksum file is read as it is (object stores keep none): the checksum finds a file changed behind
Spark's back, not a forger who rewrites both.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from boardstream.errors import BoardstreamError

HEADER = b"crc\x00"
_INT = struct.Struct(">i")
_CRC = struct.Struct(">I")


class CheckpointChecksumError(BoardstreamError):
    """A checkpoint file does not match the checksum Spark wrote beside it."""


def checksum_file(path: Path) -> Path:
    """Where Hadoop keeps ``path``'s checksums."""
    return path.with_name(f".{path.name}.crc")


def read_verified(path: Path) -> bytes:
    """``path``'s bytes, after checking them against its checksum file when it has one."""
    data = path.read_bytes()
    sums = checksum_file(path)
    if not sums.exists():
        return data
    raw = sums.read_bytes()
    chunk = _INT.unpack_from(raw, 4)[0] if len(raw) >= 8 else 0
    if raw[:4] != HEADER or chunk <= 0:
        raise CheckpointChecksumError(f"{sums} is not a Hadoop checksum file")
    actual = b"".join(
        _CRC.pack(zlib.crc32(data[start : start + chunk])) for start in range(0, len(data), chunk)
    )
    if actual != raw[8:]:
        raise CheckpointChecksumError(
            f"checkpoint file {path} does not match its checksum file {sums.name}: it was changed "
            "on disk after Spark wrote it, so the job's progress it records cannot be trusted. "
            "Spark refuses it too when the job starts again; restore the file, or start the job "
            "from a new checkpoint (which reprocesses its sources from the beginning)."
        )
    return data
