"""The manifest's kinds of record, for any pipeline: what became, or should become, of each."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kinds:
    """The manifest's kinds of record, in a pipeline's own words: the table's rows and the
    stream's records called by their singular (``member``, ``board``)."""

    row: str
    record: str

    @property
    def rows(self) -> str:
        return f"{self.row}s"

    @property
    def updates(self) -> str:
        return f"{self.row}_updates"

    @property
    def deletes(self) -> str:
        return f"{self.row}_deletes"

    @property
    def late_rows(self) -> str:
        return f"late_{self.row}s"

    @property
    def records(self) -> str:
        return f"{self.record}s"

    @property
    def late_records(self) -> str:
        return f"late_{self.record}s"

    @property
    def orphans(self) -> str:
        return f"orphan_{self.record}s"

    @property
    def of_deleted(self) -> str:
        return f"{self.record}s_of_deleted_{self.row}s"

    @property
    def well_formed(self) -> tuple[str, ...]:
        """The kinds of stream record that parse, whatever became of their row."""
        return (self.records, self.late_records, self.orphans, self.of_deleted)


def malformed_kind(flaw: str) -> str:
    return f"malformed:{flaw}"
