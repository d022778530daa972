"""The shipped pipeline's reconciliation store (:class:`~boardstream.reconcile.incremental.store.
Store`), as the tests that look into its tables name it."""

from boardstream.reconcile.evidence.run_ledger import RunLedger
from boardstream.reconcile.incremental.digest_ledger import DigestLedger
from boardstream.reconcile.incremental.fact_store import FactStore
from boardstream.reconcile.incremental.table_watch import TableWatch

SHIPPED = "board_detail"
LEDGER = DigestLedger.of(SHIPPED, "bigint")
FACTS = FactStore.of(SHIPPED)
WATCH = TableWatch.of(SHIPPED)
RUNS = RunLedger.of(SHIPPED)
