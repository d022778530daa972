"""Reconciliation: prove that a pipeline's outputs and table hold exactly every stream record.

The front door: :func:`run_once` and :func:`repair_run` (not named ``run`` and ``repair``: the
modules of those names would replace them as the package's attributes), called alike by the
jobs' command lines, the DAGs and the benches, with the names their callers pass and show (the
run kinds, the vocabulary's order). Imported lazily, so importing the package starts none of
Spark's imports.

The rooms: ``reads`` (the snapshot, the topics and the table as of it, expired outputs'
evidence), ``checks`` (every finding's rule and the vocabulary), ``incremental`` (the digest
ledger, the facts, the table watch) and ``evidence`` (the run ledger, Great Expectations, Data
Docs); ``run`` and ``repair`` use them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from boardstream.reconcile.checks.spark_checks import BALANCE  # noqa: F401
    from boardstream.reconcile.checks.vocabulary import SUMMARY_ORDER  # noqa: F401
    from boardstream.reconcile.evidence.run_ledger import FULL, INCREMENTAL  # noqa: F401
    from boardstream.reconcile.repair import repair as repair_run  # noqa: F401
    from boardstream.reconcile.run import reconcile_once as run_once  # noqa: F401


_FRONT_DOOR = {
    # one run, recorded from start to verdict
    "run_once": ("boardstream.reconcile.run", "reconcile_once"),
    # a run's findings repaired with the join's own code
    "repair_run": ("boardstream.reconcile.repair", "repair"),
    # the kinds of run
    "FULL": ("boardstream.reconcile.evidence.run_ledger", "FULL"),
    "INCREMENTAL": ("boardstream.reconcile.evidence.run_ledger", "INCREMENTAL"),
    # the names a run's numbers go by, in the order every reader shows them
    "SUMMARY_ORDER": ("boardstream.reconcile.checks.vocabulary", "SUMMARY_ORDER"),
    "BALANCE": ("boardstream.reconcile.checks.spark_checks", "BALANCE"),
}


def __getattr__(name: str) -> Any:
    """The front door's functions, imported on first use."""
    if name in _FRONT_DOOR:
        module, function = _FRONT_DOOR[name]
        return getattr(importlib.import_module(module), function)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
