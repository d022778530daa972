"""Phase timing lines for long, multi-step work (reconciliation): what took how long."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def phase(label: str) -> Iterator[None]:
    """Print ``label`` when it starts and how long it took when it ends (to stderr)."""
    began = time.perf_counter()
    print(f"{label} ...", file=sys.stderr, flush=True)
    yield
    print(f"{label}: {time.perf_counter() - began:.1f}s", file=sys.stderr, flush=True)
