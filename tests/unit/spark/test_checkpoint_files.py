"""Checkpoint files at a Hadoop filesystem URI: what a tampered or
unreachable file gives, and that a write replaces a file whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from boardstream.locations import child
from boardstream.spark.checkpoint_files import (
    CheckpointChecksumError,
    CheckpointFiles,
    CheckpointFilesError,
)


def test_a_write_replaces_the_file_and_reads_back_exactly(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    uri = child((tmp_path / "new" / "dir").as_uri(), "f.json")
    assert not checkpoint_files.exists(uri)
    checkpoint_files.write_text(uri, "first, much longer than the second\n")
    checkpoint_files.write_text(uri, "é\n")
    assert checkpoint_files.exists(uri)
    assert checkpoint_files.read_text(uri) == "é\n"
    assert (tmp_path / "new" / "dir" / "f.json").read_bytes() == "é\n".encode()
    # Written through a temporary file renamed into place: none is left behind.
    assert sorted(p.name for p in (tmp_path / "new" / "dir").iterdir()) == [".f.json.crc", "f.json"]


def test_a_file_changed_behind_hadoops_back_is_refused(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    """Hadoop's local filesystem keeps a checksum beside each file it writes, as it does for
    Spark's checkpoint files: one changed on disk fails its read."""
    uri = (tmp_path / "identity.json").as_uri()
    checkpoint_files.write_text(uri, '{"engine": "jvm"}\n')
    (tmp_path / "identity.json").write_text('{"engine": "py"}\n')
    with pytest.raises(CheckpointChecksumError) as refused:
        checkpoint_files.read_text(uri)
    assert str(refused.value).startswith(
        f"checkpoint file {tmp_path / 'identity.json'} does not match its checksum file "
        ".identity.json.crc: it was changed on disk after it was written"
    )


def test_a_scheme_without_a_connector_is_named(checkpoint_files: CheckpointFiles) -> None:
    with pytest.raises(CheckpointFilesError) as refused:
        checkpoint_files.exists("nosuchfs://host/ckpt/identity.json")
    message = str(refused.value)
    assert message.startswith("checking nosuchfs://host/ckpt/identity.json: ")
    assert 'No FileSystem for scheme "nosuchfs"' in message
