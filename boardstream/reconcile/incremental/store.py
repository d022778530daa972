"""Where one pipeline's reconciliation keeps what it has read, found and decided (#64): its
digest ledger, its facts, what it remembers of its sink table and its runs, each in tables named
after the pipeline (:func:`~boardstream.pipelines.names.store_table`), with a lease and a lock
of its own. Pipelines share a database; a run of one never reads, writes or waits for
another's."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import Engine

from boardstream.reconcile.evidence.run_ledger import RunLedger
from boardstream.reconcile.incremental.digest_ledger import DigestLedger
from boardstream.reconcile.incremental.fact_store import FactStore
from boardstream.reconcile.incremental.table_watch import TableWatch
from boardstream.reconcile.target import ReconcileTarget


@dataclass(frozen=True)
class Store:
    ledger: DigestLedger
    facts: FactStore
    watch: TableWatch
    runs: RunLedger

    @classmethod
    def of(cls, target: ReconcileTarget) -> Store:
        name = target.pipeline.name
        return cls(
            DigestLedger.of(name, target.layout.key_type),
            FactStore.of(name),
            TableWatch.of(name),
            RunLedger.of(name),
        )

    @property
    def lease(self) -> str:
        """The lease one run of the pipeline at a time holds from its snapshot to its verdict."""
        return f"reconciliation:{self.ledger.pipeline}:ledger"

    def create(self, engine: Engine) -> None:
        """Create the tables that do not exist yet."""
        for part in (self.ledger, self.facts, self.watch, self.runs):
            part.create(engine)
