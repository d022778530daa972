"""The run's report, ``test-artifacts/compose-run.json``: each phase's time, each image's size
and what each check found, written whether the run passed or not, so a failed run says how far
it came (the long test reads it)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from boardstream.entrypoints.compose.commands import log
from boardstream.settings import PROJECT_ROOT

ARTIFACTS = PROJECT_ROOT / "test-artifacts"
REPORT_FILE = ARTIFACTS / "compose-run.json"


class Report:
    def __init__(self) -> None:
        self.data: dict[str, Any] = {"phases": {}, "images": {}, "standins": []}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """The phase's time in seconds, recorded and logged however it ends."""
        log(f"--- {name}")
        start = time.monotonic()
        try:
            yield
        finally:
            self.data["phases"][name] = round(time.monotonic() - start, 1)
            log(f"{name}: {self.data['phases'][name]} s")

    def write(self) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        REPORT_FILE.write_text(json.dumps(self.data, indent=2) + "\n")
