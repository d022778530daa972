"""Checkpoint locations as URIs: a plain path is a local file, a URI stays as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from boardstream.locations import checkpoint_uri, child, shown


@pytest.mark.parametrize(
    ("location", "uri"),
    [
        ("/srv/ckpt", "file:///srv/ckpt"),
        ("/srv/ckpt/", "file:///srv/ckpt"),
        ("file:///srv/ckpt/", "file:///srv/ckpt"),
        ("hdfs://nn:8020/ckpt/", "hdfs://nn:8020/ckpt"),
        ("s3a://bucket/ckpt", "s3a://bucket/ckpt"),
    ],
)
def test_a_location_is_a_uri_and_a_plain_path_a_local_file(location: str, uri: str) -> None:
    assert checkpoint_uri(location) == uri


def test_a_relative_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert checkpoint_uri(Path("ckpt")) == (tmp_path / "ckpt").as_uri()


def test_child() -> None:
    assert child("hdfs://nn:8020/ckpt/", "offsets") == "hdfs://nn:8020/ckpt/offsets"


def test_shown_names_a_local_file_by_its_path() -> None:
    assert shown("file:///srv/ckpt/offsets/3") == "/srv/ckpt/offsets/3"
    assert shown("hdfs://nn:8020/ckpt") == "hdfs://nn:8020/ckpt"
