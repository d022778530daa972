"""Phase timing lines for long, multi-step work (reconciliation): what took how long."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

logger = logging.getLogger(__name__)


@contextmanager
def phase(label: str) -> Iterator[None]:
    """Log ``label`` when it starts and how long it took when it ends (INFO: progress, not
    trouble, so a task log never shows it as an error)."""
    began = time.perf_counter()
    logger.info("%s ...", label)
    yield
    logger.info("%s: %.1fs", label, time.perf_counter() - began)
