"""A checkpoint file read outside Spark is checked against the checksum file Hadoop wrote beside
it (that real Spark checkpoints pass: tests/integration/test_checkpoint_files.py)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from boardstream.spark.checkpoint_checksums import (
    CheckpointChecksumError,
    checksum_file,
    read_verified,
)

DATA = bytes(range(256)) * 5  # 1,280 bytes: three 512-byte chunks, the last one short


def write(path: Path, data: bytes, chunk: int = 512) -> None:
    """``path`` and its checksum file in Hadoop's layout."""
    path.write_bytes(data)
    sums = [zlib.crc32(data[i : i + chunk]) for i in range(0, len(data), chunk)]
    checksum_file(path).write_bytes(b"crc\x00" + struct.pack(f">i{len(sums)}I", chunk, *sums))


def test_a_file_that_matches_its_checksums_is_read_whole(tmp_path: Path) -> None:
    write(tmp_path / "0", DATA)
    assert checksum_file(tmp_path / "0") == tmp_path / ".0.crc"
    assert read_verified(tmp_path / "0") == DATA


def test_an_empty_file_has_no_chunk_to_check(tmp_path: Path) -> None:
    write(tmp_path / "0", b"")
    assert read_verified(tmp_path / "0") == b""


@pytest.mark.parametrize(
    "altered",
    [
        DATA[:700] + b"\x00" + DATA[701:],  # one byte in the second chunk
        DATA[:-1],  # one byte short
        DATA + b"\n",  # one byte more: a chunk the checksums do not have
    ],
    ids=["byte", "shorter", "longer"],
)
def test_a_file_changed_after_its_checksums_is_refused_by_name(
    tmp_path: Path, altered: bytes
) -> None:
    write(tmp_path / "7", DATA)
    (tmp_path / "7").write_bytes(altered)
    with pytest.raises(CheckpointChecksumError) as raised:
        read_verified(tmp_path / "7")
    assert str(raised.value).startswith(
        f"checkpoint file {tmp_path / '7'} does not match its checksum file .7.crc: it was "
        "changed on disk after Spark wrote it"
    )


def test_a_file_without_checksums_is_read_as_it_is(tmp_path: Path) -> None:
    """As Hadoop reads it (object stores keep none)."""
    (tmp_path / "0").write_bytes(DATA)
    assert read_verified(tmp_path / "0") == DATA


@pytest.mark.parametrize(
    "checksums", [b"", b"crc\x00", b"CRC\x00\x00\x00\x02\x00", b"crc\x00\x00\x00\x00\x00"]
)
def test_a_checksum_file_not_in_hadoops_layout_is_refused(tmp_path: Path, checksums: bytes) -> None:
    (tmp_path / "0").write_bytes(DATA)
    (tmp_path / ".0.crc").write_bytes(checksums)
    with pytest.raises(CheckpointChecksumError, match=r"\.0\.crc is not a Hadoop checksum file"):
        read_verified(tmp_path / "0")
