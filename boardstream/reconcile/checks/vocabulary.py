"""The names a reconciliation's numbers go by, in the one order every reader of them shows: the
CLI summary, the reconciliation DAG's XCom, the "Pipeline health" page and the demo. Each name
is the checks' own (:mod:`.spark_checks`) and is defined once, in docs/RECONCILIATION.md, "What a
run checks"; nothing here renames or redefines one."""

from __future__ import annotations

from boardstream.reconcile.checks.spark_checks import BALANCE, COUNTS, FAILING, REPORTED

# The balance first, then each failing finding, then what is only reported, then the table's.
SUMMARY_ORDER = (
    *BALANCE,
    *(kind for kind in FAILING if kind not in BALANCE),
    *REPORTED,
    *(name for name in COUNTS if name not in BALANCE),
)
# The classes that add up to ``source`` (``read`` is their subtotal), in the balance's order.
PARTS = tuple(name for name in BALANCE if name not in ("source", "read"))
# Parts that fail a run: shown only when a run has any.
FAILING_PARTS = tuple(name for name in PARTS if name in FAILING)
# Boards still on their way through the pipeline, kept with ids (WITH_IDS) but not findings:
# waiting for their member, beyond the join's committed offsets, beyond the sink's, loaded by
# the sink from records written after the snapshot.
IN_TRANSIT = ("pending", "not_yet_read", "not_yet_loaded", "loaded_ahead")
