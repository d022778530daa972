"""The generator's manifest: per kind of record, how many were produced and their keys.

Tests and reconciliation compare what reached a topic or a table with this, key by key.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from boardstream.generator.plan import GeneratorOptions, PlannedRecord


@dataclass
class Manifest:
    options: dict[str, Any]
    topics: dict[str, str]
    keys: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def start(cls, options: GeneratorOptions, topics: dict[str, str]) -> Manifest:
        return cls(options=dict(options.__dict__), topics=topics)

    def add(self, record: PlannedRecord) -> None:
        self.keys[record.kind].append(record.key.decode())

    @property
    def counts(self) -> dict[str, int]:
        return {kind: len(keys) for kind, keys in sorted(self.keys.items())}

    def board_ids(self) -> set[str]:
        """Every well-formed board id, whatever became of its member."""
        kinds = ("boards", "late_boards", "orphan_boards", "boards_of_deleted_members")
        return {key for kind in kinds for key in self.keys.get(kind, [])}

    def to_json(self) -> dict[str, Any]:
        return {
            "options": self.options,
            "topics": self.topics,
            "counts": self.counts,
            "keys": dict(sorted(self.keys.items())),
        }

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json()))
        tmp.replace(path)

    @classmethod
    def read(cls, path: Path) -> Manifest:
        data = json.loads(path.read_text())
        manifest = cls(options=data["options"], topics=data["topics"])
        manifest.keys.update(data["keys"])
        return manifest


def default_path(var_dir: Path, seed: int) -> Path:
    """Where a run's manifest goes unless told: timestamped, so runs never overwrite each other."""
    return var_dir / "manifests" / (time.strftime("%Y%m%dT%H%M%S") + f"-seed{seed}.json")
