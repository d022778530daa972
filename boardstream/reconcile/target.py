"""What one reconciliation run checks (issue #64): a deployed pipeline's topics, the layout its
reads take and its sink table, so that no step of a run names the shipped pipeline's topics or
columns."""

from __future__ import annotations

from dataclasses import dataclass

from boardstream.joins.topics import Deployed, JoinTopics
from boardstream.pipelines import Pipeline
from boardstream.reconcile.layout import ReconcileLayout
from boardstream.settings import Settings
from boardstream.sink.table import SinkTable

# The join's output holders (how the digest ledger and the checks name them).
JOINED, UNMATCHED, DEAD_LETTERED = "joined", "unmatched", "dead_lettered"


@dataclass(frozen=True)
class ReconcileTarget:
    pipeline: Pipeline
    topics: JoinTopics
    layout: ReconcileLayout
    table: SinkTable

    @classmethod
    def of(cls, deployed: Deployed) -> ReconcileTarget:
        pipeline = deployed.pipeline
        return cls(pipeline, deployed.topics, ReconcileLayout.of(pipeline), SinkTable.of(pipeline))

    @classmethod
    def shipped(cls, settings: Settings) -> ReconcileTarget:
        """The shipped pipeline on the settings' topics (a test's own prefix included)."""
        return cls.of(Deployed.shipped(settings))

    @property
    def holders(self) -> dict[str, str]:
        """The join's output holders and the topic each is read from."""
        topics = self.topics
        return {
            JOINED: topics.joined,
            UNMATCHED: topics.unmatched,
            DEAD_LETTERED: topics.dead_letters,
        }

    @property
    def read(self) -> tuple[str, ...]:
        """Every topic a run reads: the table's, the stream's, then the outputs."""
        return (self.topics.table, self.topics.stream, *self.holders.values())
