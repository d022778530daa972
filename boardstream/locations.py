"""Where checkpoints live, as URIs: the one form every host and Hadoop's ``FileSystem`` agree on.

A checkpoint may be on HDFS, S3 or a local disk (``hdfs://…``, ``s3a://…``, ``file://…``); a plain
path means a local one. Pure string work, so that settings and the supervision name checkpoints
without a JVM.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit


def checkpoint_uri(location: str | Path) -> str:
    """``location`` as a URI: one with a scheme as it is, a plain path as an absolute
    ``file://`` URI (a cluster's default filesystem must not reinterpret it)."""
    text = str(location)
    if len(urlsplit(text).scheme) > 1:  # "C:" is a drive, not a scheme
        return text.rstrip("/")
    return Path(text).absolute().as_uri()


def child(uri: str, name: str) -> str:
    """The file ``name`` in the directory ``uri``."""
    return f"{uri.rstrip('/')}/{name}"


def shown(uri: str) -> str:
    """``uri`` as a message names it: a local file by its path."""
    parts = urlsplit(uri)
    return parts.path if parts.scheme == "file" else uri
