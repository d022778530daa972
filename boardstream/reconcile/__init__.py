"""Reconciliation: prove that board-detail and board_detail hold exactly every source board.

The front door: :func:`run_once` and :func:`repair_run` (not named ``run`` and ``repair``: the
modules of those names would replace them as the package's attributes), called alike by the
jobs' command lines, the DAGs and the benches. Imported lazily, so reading the vocabulary does
not start Spark's imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from boardstream.reconcile.repair import repair as repair_run  # noqa: F401
    from boardstream.reconcile.run import reconcile_once as run_once  # noqa: F401


_FRONT_DOOR = {
    # one run, recorded from start to verdict
    "run_once": ("boardstream.reconcile.run", "reconcile_once"),
    # a run's findings repaired with the join's own code
    "repair_run": ("boardstream.reconcile.repair", "repair"),
}


def __getattr__(name: str) -> Any:
    """The front door's functions, imported on first use."""
    if name in _FRONT_DOOR:
        module, function = _FRONT_DOOR[name]
        return getattr(importlib.import_module(module), function)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
