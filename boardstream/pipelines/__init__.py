"""Pipelines declared in files: a stream joined with a table, its outputs, its sink and its
proof, one YAML file each (docs/PIPELINES.md).

The front door: :class:`Pipeline` (the typed declaration), :func:`load_directory` (the
directory a setting names, checked as a whole), :func:`check_file` and :func:`shipped` (the
declarations installed with the package, the platform's own among them).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from boardstream.errors import BoardstreamError
from boardstream.pipelines.fields import (
    TYPE_NAMES,
    Boolean,
    Date,
    Decimal,
    Double,
    FieldType,
    Int64,
    Text,
    Timestamp,
)
from boardstream.pipelines.load import Declared, load_directory, read, to_yaml
from boardstream.pipelines.model import (
    LOADED_AT,
    POSITIONS,
    ROWTIME,
    Join,
    Pipeline,
    Reconcile,
    Slo,
)
from boardstream.pipelines.names import query_name, with_article

# Installed as package data (pyproject.toml), so a wheel has them.
SHIPPED = Path(__file__).resolve().parent / "declarations"


@cache
def shipped(name: str) -> Pipeline:
    """The shipped declaration ``name``, whatever directory the settings name."""
    return read(SHIPPED / f"{name}.yml")


def check_file(file: Path, directory: Path) -> Pipeline:
    """The pipeline ``file`` declares, checked alone and beside the pipelines of ``directory``
    (the directory it is meant for)."""
    declared = load_directory(directory, also=file)
    return next(one.pipeline for one in declared.values() if one.file == file)


def find(declared: dict[str, Declared], name: str) -> Declared:
    """The pipeline ``name``, or a refusal naming the choices."""
    if name not in declared:
        raise BoardstreamError(
            f"no pipeline {name!r}; declared: {', '.join(sorted(declared)) or 'none'}"
        )
    return declared[name]


__all__ = [
    "LOADED_AT",
    "POSITIONS",
    "ROWTIME",
    "SHIPPED",
    "TYPE_NAMES",
    "Boolean",
    "Date",
    "Decimal",
    "Declared",
    "Double",
    "FieldType",
    "Int64",
    "Join",
    "Pipeline",
    "Reconcile",
    "Slo",
    "Text",
    "Timestamp",
    "check_file",
    "find",
    "load_directory",
    "query_name",
    "shipped",
    "to_yaml",
    "with_article",
]
