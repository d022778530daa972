"""The facts of the last check of every key (#22): what an incremental run's findings add up to.

A fact is one check holding on one key (``checks.FACT_COLUMNS``): a source position's class or
finding, keyed by the position; a board's, keyed by the board. A run that re-checks some keys
replaces every fact of those keys and moves the running counts by the difference, so the store
always says what the last check of each key found, and its counts are what one full run over
the same data counts (``checks._evaluate``), without counting the whole store again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from itertools import groupby

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from boardstream import database, staging
from boardstream.pipelines.names import store_table
from boardstream.reconcile.incremental.affected import Keys


def _tables(metadata: sa.MetaData, pipeline: str) -> tuple[sa.Table, sa.Table]:
    """A pipeline's facts and their counts."""

    def named(part: str) -> str:
        return store_table(pipeline, part)

    fact = sa.Table(
        named("reconcile_fact"),
        metadata,
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("partition", sa.Integer),  # with offset: the source position; NULL: a key's
        sa.Column("offset", sa.BigInteger),
        sa.Column("board_id", sa.Text),
        sa.Column("detail", sa.Text),  # what a type_mismatch found, as its example says it
        sa.Index(named("reconcile_fact_position"), "partition", "offset"),
        sa.Index(named("reconcile_fact_board"), "board_id"),
        sa.Index(named("reconcile_fact_kind"), "kind", "board_id"),
    )
    # Facts per kind and source partition (-1: keyed by the stream record's id), by difference.
    count = sa.Table(
        named("reconcile_count"),
        metadata,
        sa.Column("kind", sa.String(40), primary_key=True),
        sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("n", sa.BigInteger, nullable=False),
    )
    return fact, count


NO_PARTITION = -1
_CHUNK = 400  # keys per statement: two parameters a position, under SQLite's 999
COLUMNS = ("kind", "partition", "offset", "board_id", "detail")


@dataclass(frozen=True, eq=False)
class FactStore:
    """One pipeline's facts (:meth:`FactStore.of`), in tables named after it."""

    pipeline: str
    metadata: sa.MetaData
    fact_table: sa.Table
    count_table: sa.Table

    @staticmethod
    @cache
    def of(pipeline: str) -> FactStore:
        metadata = sa.MetaData()
        return FactStore(pipeline, metadata, *_tables(metadata, pipeline))

    def create(self, engine: Engine) -> None:
        self.metadata.create_all(engine)

    def replace(
        self, connection: Connection, keys: Keys, facts: pa.Table
    ) -> Counter[tuple[str, int]]:
        """Replace every stored fact of ``keys`` with ``facts`` (FACT_COLUMNS rows, each of one of
        those keys) and move the counts by the difference, which is returned (changed counts only).
        In the caller's transaction."""
        f = self.fact_table.c
        old: Counter[tuple[str, int]] = Counter()
        for condition in self._of(keys):
            rows = connection.execute(sa.select(f.kind, f.partition).where(condition)).all()
            old.update((kind, _partition(p)) for kind, p in rows)
            connection.execute(self.fact_table.delete().where(condition))
        new = Counter(
            (kind, _partition(p))
            for kind, p in zip(
                facts.column("kind").to_pylist(), facts.column("partition").to_pylist(), strict=True
            )
        )
        self._insert(connection, facts)
        new.subtract(old)
        delta = Counter({key: n for key, n in new.items() if n})
        self._move(connection, delta)
        return delta

    def stage(self, engine: Engine, facts: pa.Table) -> sa.Table:
        """A full run's facts staged ahead of its transaction (:mod:`boardstream.staging`), for
        :func:`reset`."""
        return staging.stage(engine, self.fact_table, _complete(facts))

    def reset(self, connection: Connection, staged: sa.Table) -> None:
        """Every fact of a full run (:func:`stage`) in place of all stored ones, the counts
        counted afresh. In the caller's transaction."""
        staging.move_in(connection, staged, self.fact_table, replace=True)
        connection.execute(self.count_table.delete())
        f = self.fact_table.c
        partition = sa.func.coalesce(f.partition, NO_PARTITION)
        counted = sa.select(f.kind, partition, sa.func.count()).group_by(f.kind, partition)
        connection.execute(
            self.count_table.insert().from_select(["kind", "partition", "n"], counted)
        )

    def counts(self, connection: Connection) -> dict[tuple[str, int | None], int]:
        """Facts per (kind, source partition or None for board facts), as ``_evaluate`` counts."""
        c = self.count_table.c
        rows = connection.execute(sa.select(c.kind, c.partition, c.n).where(c.n != 0))
        return {(kind, None if p == NO_PARTITION else p): n for kind, p, n in rows}

    def examples(self, connection: Connection, kind: str, limit: int | None) -> list[str]:
        """``kind``'s facts as a run lists them (a fact's detail, else its board id), sorted, the
        first ``limit`` (all when None)."""
        f = self.fact_table.c
        query = sa.select(f.board_id, f.detail).where(f.kind == kind, f.board_id.is_not(None))
        query = query.order_by(f.board_id, f.detail)
        rows = connection.execute(query.limit(limit) if limit else query)
        return [detail or board_id for board_id, detail in rows]

    def open_keys(self, connection: Connection, settled: Iterable[str]) -> Keys:
        """The keys with a fact of a kind not in ``settled``: a board still in transit (pending,
        not yet read or loaded) or with a finding, which the next run must check again even if no
        new record touches it (a repair, a timer, the sink catching up). Looked up by kind among
        the kinds the counts hold (an index range each), not by scanning every fact."""
        c, f = self.count_table.c, self.fact_table.c
        present = connection.execute(sa.select(c.kind).where(c.n != 0).distinct()).scalars()
        kinds = sorted(set(present) - set(settled))
        if not kinds:
            return Keys()
        rows = connection.execute(
            sa.select(f.partition, f.offset, f.board_id).where(f.kind.in_(kinds)).distinct()
        ).all()
        return Keys.of(
            {(p, o) for p, o, _ in rows if p is not None},
            {board for p, _, board in rows if p is None},
        )

    def _insert(self, connection: Connection, facts: pa.Table) -> None:
        database.insert_rows(connection, self.fact_table, _complete(facts))

    def _of(self, keys: Keys) -> Iterator[sa.ColumnElement[bool]]:
        """Conditions selecting the facts of ``keys``, a chunk of keys each: positions as one
        partition's equality and an ``IN`` list of its offsets (an index range; row-value ``IN``
        lists took seconds for a few thousand positions on SQLite)."""
        f = self.fact_table.c
        for partition, group in groupby(sorted(keys.positions), key=lambda key: key[0]):
            for chunk in database.chunks([offset for _, offset in group], _CHUNK):
                yield (f.partition == partition) & f.offset.in_(chunk)
        for chunk in database.chunks(sorted(keys.boards), _CHUNK):
            yield f.partition.is_(None) & f.board_id.in_(chunk)

    def _move(self, connection: Connection, delta: dict[tuple[str, int], int]) -> None:
        if not delta:
            return
        statement = database.upsert_insert(connection.dialect, self.count_table, "the fact counts")
        statement = statement.on_conflict_do_update(
            index_elements=[self.count_table.c.kind, self.count_table.c.partition],
            set_={"n": self.count_table.c.n + statement.excluded.n},
        )
        connection.execute(
            statement, [{"kind": k, "partition": p, "n": n} for (k, p), n in sorted(delta.items())]
        )


def _complete(facts: pa.Table) -> pa.Table:
    """``facts`` (FACT_COLUMNS, with or without ``detail``) in the store's columns."""
    if "detail" not in facts.column_names:
        facts = facts.append_column("detail", pa.nulls(facts.num_rows, pa.string()))
    return facts.select(list(COLUMNS))


def _partition(partition: int | None) -> int:
    return NO_PARTITION if partition is None else partition
