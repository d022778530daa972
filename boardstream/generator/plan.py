"""What the generator produces, in which order: a pure, seeded sequence of Kafka records for
any pipeline, with every case of its join.

Kept free of any Kafka client so the exact data a seed means can be unit-tested and compared.
The plan decides which records come and in what order; a pipeline's :class:`Records` says what
each record is (its key and bytes). The order has three phases, chosen so each join case really
happens on the broker:

1. table rows (all but the late ones), by row number;
2. stream records, shuffled, with row updates spread through them, row deletes (tombstones) at
   the halfway point and malformed records spread evenly;
3. the late rows, after every stream record that names them.

Stream records of a row deleted in phase 2 that come after its tombstone name a deleted row;
orphans name rows that are never produced.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from boardstream.errors import InvalidOptionError
from boardstream.generator.board_records import BoardRecords, board_kinds
from boardstream.generator.declared_records import DeclaredRecords, kinds_of
from boardstream.generator.kinds import malformed_kind
from boardstream.generator.timeline import DEFAULT_START_MS, record_ms, row_version_ms
from boardstream.joins.topics import SHIPPED_PIPELINE
from boardstream.pipelines import Pipeline

PRODUCTION_MEMBERS = 442_128
PRODUCTION_BOARDS = 447_017
TABLE, STREAM = "table", "stream"


@dataclass(frozen=True)
class GeneratorOptions:
    members: int = 1_000
    boards: int = 1_000
    seed: int = 42
    update_ratio: float = 0.0
    deletes: int = 0
    late_members: int = 0
    orphans: int = 0
    malformed: int = 0
    start_ms: int = DEFAULT_START_MS

    def __post_init__(self) -> None:
        """Refuse, on construction, the first option that cannot be satisfied."""
        for name in ("members", "boards", "deletes", "late_members", "orphans", "malformed"):
            words = name.replace("_", " ")
            if getattr(self, name) < 0:
                raise InvalidOptionError(f"{words} must be >= 0", words)
        if not 0 <= self.update_ratio <= 100:
            raise InvalidOptionError("update ratio must be between 0 and 100", "update ratio")
        if self.late_members + self.deletes > self.members:
            raise InvalidOptionError(
                "late members plus deletes cannot exceed members",
                "late members",
                "deletes",
                "members",
            )
        if self.late_members + self.orphans > self.boards:
            raise InvalidOptionError(
                "late members plus orphans cannot exceed boards "
                "(each late member and each orphan needs a board of its own)",
                "late members",
                "orphans",
                "boards",
            )


def production_scale() -> dict[str, int]:
    """The member and board counts of the production data set this project is sized for."""
    return {"members": PRODUCTION_MEMBERS, "boards": PRODUCTION_BOARDS}


@dataclass(frozen=True)
class PlannedRecord:
    """One record to produce. ``kind`` names the manifest bucket it belongs to; ``row`` is the
    number of the table row it is or names (None: a malformed record); ``at_ms`` when it
    happened on the generator's timeline (a row version's time, a stream record's event time,
    a deletion's moment in the stream), which a test may stamp it with as its Kafka time."""

    topic: str  # TABLE or STREAM: the pipeline's side, mapped to a topic by the producer
    key: bytes
    value: bytes | None
    kind: str
    row: int | None = None
    at_ms: int | None = None


class Records(Protocol):
    """One pipeline's records, drawn from the plan's seeded generator in the order the plan
    asks for them (so a seed means the same bytes)."""

    @property
    def flaws(self) -> tuple[str, ...]:
        """The malformed records' flaws, in the order the plan cycles through them."""
        ...

    def key(self, row: int) -> bytes:
        """Row ``row``'s Kafka key (a tombstone's)."""
        ...

    def row(self, row: int, version: int) -> bytes:
        """Row ``row``'s value, its ``version``-th (0: its first)."""
        ...

    def record(self, index: int, row: int) -> tuple[bytes, bytes, int]:
        """The ``index``-th stream record (its key, its value, its event time), naming row
        ``row``."""
        ...

    def malformed(self, flaw: str, number: int) -> tuple[bytes, bytes, int]:
        """A stream record a consumer must dead-letter, not crash on (its key, its value, its
        time): ``flaw`` is what is wrong with it."""
        ...


class Plan:
    """Iterate to get ``pipeline``'s records (the shipped pipeline's if None: its own shapes of
    member and board, :mod:`~boardstream.generator.board_records`; any other's from its
    declaration, :mod:`~boardstream.generator.declared_records`); :attr:`size` says how many
    there will be."""

    def __init__(self, options: GeneratorOptions, pipeline: Pipeline | None = None) -> None:
        self.options = options
        self.rng = random.Random(options.seed)
        self.records: Records
        if pipeline is None or pipeline.name == SHIPPED_PIPELINE:
            self.records, self.kinds = BoardRecords(self.rng, options.start_ms), board_kinds()
        else:
            self.records = DeclaredRecords(pipeline, self.rng, options.start_ms)
            self.kinds = kinds_of(pipeline)
        rng, o = self.rng, options
        ids = list(range(1, o.members + 1))
        picked = rng.sample(ids, o.late_members + o.deletes)
        self.late_ids = sorted(picked[: o.late_members])
        self.deleted_ids = sorted(picked[o.late_members :])
        self.updates = round(o.update_ratio * o.members)
        # Updates go to rows that exist for the whole stream phase: an update of a late row
        # would make it early, one of a deleted row would bring it back.
        excluded = set(picked)
        self.updatable = [i for i in ids if i not in excluded]
        if self.updates and not self.updatable:
            raise InvalidOptionError(
                "update ratio needs members that are neither late nor deleted", "update ratio"
            )
        self.size = o.members + o.boards + self.updates + o.deletes + o.malformed
        self.records.key(o.members + o.orphans)  # the highest row: refused now, not midway

    def __iter__(self) -> Iterator[PlannedRecord]:
        late = set(self.late_ids)
        for row in range(1, self.options.members + 1):
            if row not in late:
                yield self._row(row, self.kinds.rows, version=0)
        yield from self._stream_phase()
        for row in self.late_ids:
            yield self._row(row, self.kinds.late_rows, version=0)

    def _named_rows(self) -> list[int]:
        """The row each stream record names, in production order."""
        o, rng = self.options, self.rng
        owners = list(self.late_ids)  # every late row gets at least one record
        owners += [o.members + 1 + i for i in range(o.orphans)]  # rows never produced
        owners += [rng.randint(1, o.members) for _ in range(o.boards - len(owners))]
        rng.shuffle(owners)
        return owners

    def _stream_phase(self) -> Iterator[PlannedRecord]:
        o, rng, kinds = self.options, self.rng, self.kinds
        owners = self._named_rows()
        orphan_floor = o.members + 1
        late = set(self.late_ids)
        deleted: set[int] = set()
        half = len(owners) // 2
        update_every = len(owners) / self.updates if self.updates else 0.0
        malformed_every = len(owners) / o.malformed if o.malformed else 0.0
        next_update, next_malformed = 0.0, 0.0
        updates_done = malformed_done = 0
        for index, row in enumerate(owners):
            if index == half:
                for deleted_id in self.deleted_ids:
                    deleted.add(deleted_id)
                    yield self._tombstone(deleted_id, index)
            while updates_done < self.updates and index >= next_update:
                updates_done += 1
                next_update += update_every
                target = rng.choice(self.updatable)
                yield self._row(target, kinds.updates, version=updates_done)
            while malformed_done < o.malformed and index >= next_malformed:
                yield self._malformed(malformed_done)
                malformed_done += 1
                next_malformed += malformed_every
            if row >= orphan_floor:
                kind = kinds.orphans
            elif row in late:
                kind = kinds.late_records
            elif row in deleted:
                kind = kinds.of_deleted
            else:
                kind = kinds.records
            key, value, at_ms = self.records.record(index, row)
            yield PlannedRecord(STREAM, key, value, kind, row, at_ms)
        if half == len(owners):  # no stream records: deletes still happen
            for deleted_id in self.deleted_ids:
                yield self._tombstone(deleted_id, half)
        for _ in range(updates_done, self.updates):
            yield self._row(rng.choice(self.updatable), kinds.updates, version=self.updates)
        for number in range(malformed_done, o.malformed):
            yield self._malformed(number)

    def _row(self, row: int, kind: str, version: int) -> PlannedRecord:
        value = self.records.row(row, version)
        at_ms = row_version_ms(self.options.start_ms, row, version)
        return PlannedRecord(TABLE, self.records.key(row), value, kind, row, at_ms)

    def _tombstone(self, row: int, index: int) -> PlannedRecord:
        """Deleted as the ``index``-th stream record's time begins: every record before it is
        earlier, none after it is."""
        at_ms = record_ms(self.options.start_ms, index)
        return PlannedRecord(TABLE, self.records.key(row), None, self.kinds.deletes, row, at_ms)

    def _malformed(self, number: int) -> PlannedRecord:
        flaws = self.records.flaws
        flaw = flaws[number % len(flaws)]
        key, value, at_ms = self.records.malformed(flaw, number)
        return PlannedRecord(STREAM, key, value, malformed_kind(flaw), at_ms=at_ms)
