"""Declarations for tests: the shipped orders declaration, changed one key at a time."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from boardstream.pipelines import SHIPPED

ORDERS: dict[str, Any] = yaml.safe_load((SHIPPED / "orders.yml").read_text())
DELETE = object()


def changed(changes: dict[str, object], base: dict[str, Any] = ORDERS) -> dict[str, Any]:
    """``base`` with each dotted key of ``changes`` set to its value (or deleted: DELETE)."""
    data = copy.deepcopy(base)
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = data
        for part in parents:
            node = node[part]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return data


def write(directory: Path, name: str, data: dict[str, Any]) -> Path:
    path = directory / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
