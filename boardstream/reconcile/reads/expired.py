"""Outcomes outlive their evidence: output records their topic no longer holds (retention,
``deleteRecords``) still account for their source positions.

An output record an earlier run read stays in the digest ledger (its projection: positions and
digests), and a ``board_detail`` row holds the whole content of the ``board-detail`` record it
names (its content digest is the record's). Where a topic has deleted an output record, the
checks take it from there, flagged ``expired``: its source position keeps its outcome, reported
as ``expired_evidence``, and the row loaded from it is checked against the ledger's copy as
against the record. Only for positions ``board`` still holds: an output whose source expired too
accounts for nothing (``source_expired``, ``unverifiable_in_table``).

Output records a topic deleted before any run read them are kept as ranges
(``reconcile_unseen``). While there are any, a read source position in no outcome is
``expired_unseen`` instead of ``missing``: it fails all the same, as nothing proves its fate.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from sqlalchemy.engine import Connection

from boardstream.reconcile.incremental import digest_ledger
from boardstream.reconcile.incremental.digest_ledger import DigestLedger
from boardstream.reconcile.layout import ReconcileLayout
from boardstream.reconcile.reads import readers
from boardstream.reconcile.reads.snapshot import Offsets, Snapshot
from boardstream.reconcile.target import JOINED, ReconcileTarget

log = logging.getLogger(__name__)

RECORD = ("record_partition", "record_offset")
EXPIRED = "expired"  # the flag column of a record taken from evidence
# (topic, partition, from offset, to offset): output records deleted before any run read them.
Range = tuple[str, int, int, int]


# Each output holder's columns as its reader gives them (readers.unmatched, readers.dead_letters;
# a joined record's are digest_ledger.DETAIL_COLUMNS).
HOLDER_COLUMNS = {
    "joined": digest_ledger.DETAIL_COLUMNS,
    "unmatched": (
        "board_id",
        "source_partition",
        "source_offset",
        "board_digest",
        "record_partition",
        "record_offset",
    ),
    "dead_lettered": (
        "board_id",
        "source_partition",
        "source_offset",
        "record_partition",
        "record_offset",
    ),
}


@dataclass(frozen=True)
class Kept:
    """What the digest ledger keeps of what the output topics deleted: per holder the records
    that are evidence (:func:`accountable`), in their reader's columns and flagged; the
    positions the join or the sink dead-lettered (``reconcile_refused`` rows); every range
    deleted before any run read it, and the ones this run finds (to be recorded with its
    verdict)."""

    outputs: dict[str, pa.Table]
    refused: pa.Table
    unseen: tuple[Range, ...]
    new_unseen: tuple[Range, ...]


def kept(
    connection: Connection, ledger: DigestLedger, target: ReconcileTarget, snapshot: Snapshot
) -> Kept:
    """A full run's evidence from the ledger: every output record below its topic's earliest
    offset whose source the stream still holds."""
    board = snapshot.earliest.get(target.topics.stream, {})
    outputs = {}
    for holder, topic in target.holders.items():
        earliest = snapshot.earliest.get(topic, {})
        rows = ledger.below(connection, holder, earliest)
        if holder == JOINED:
            rows = digest_ledger.as_details(rows)
        rows = rows.select(list(HOLDER_COLUMNS[holder]))
        own = ("detail_partition", "detail_offset") if holder == JOINED else RECORD
        outputs[holder] = flagged(rows.filter(accountable(rows, own, earliest, board)), True)
    found = new_unseen(target, ledger.cursor(connection), snapshot.earliest)
    return Kept(
        outputs,
        ledger.refused(connection),
        (*ledger.unseen(connection), *found),
        tuple(found),
    )


def new_unseen(target: ReconcileTarget, cursor: Offsets, earliest: Offsets) -> list[Range]:
    """The output records between how far the ledger has read (``cursor``; nothing before the
    first run) and where each topic now starts: deleted before any run read them."""
    found = [
        (topic, p, cursor.get(topic, {}).get(p, 0), start)
        for topic in sorted(target.holders.values())
        for p, start in sorted(earliest.get(topic, {}).items())
        if start > cursor.get(topic, {}).get(p, 0)
    ]
    if found:
        log.warning(
            "output records deleted before any reconciliation read them: %s; a read board in "
            "no outcome is expired_unseen from now on (reconcile more often than the outputs' "
            "retention)",
            ", ".join(describe(found)),
        )
    return found


def describe(ranges: Iterable[Range]) -> tuple[str, ...]:
    """``board-detail[1] [0, 50)``, one per range."""
    return tuple(f"{topic}[{p}] [{start:,}, {end:,})" for topic, p, start, end in ranges)


def accountable(
    rows: pa.Table, position: tuple[str, str], earliest: dict[int, int], board: dict[int, int]
) -> pa.Array:
    """Which ``rows`` are evidence: their own ``position`` below its partition's ``earliest``
    offset (the topic deleted them), their source position still in ``board`` (from its
    partition's earliest offset there on)."""
    return pc.and_(
        below(rows, position, earliest),
        pc.invert(below(rows, ("source_partition", "source_offset"), board)),
    )


def flagged(rows: pa.Table, expired: bool | pa.Array | pa.ChunkedArray) -> pa.Table:
    """``rows`` with the ``expired`` flag column: one value for all, or one per row."""
    flag = pa.array([expired] * rows.num_rows) if isinstance(expired, bool) else expired
    return rows.append_column(EXPIRED, flag.cast(pa.bool_()))


def table_details(
    spark: SparkSession,
    layout: ReconcileLayout,
    rows: pa.Table,
    earliest: dict[int, int],
    board: dict[int, int],
    known: Iterable[tuple[int, int]],
) -> pa.Table:
    """The joined records the typed table ``rows`` (:func:`readers.read_table`'s) were
    loaded from, where the topic deleted them and no ledger copy is ``known`` (their
    positions): in ``readers.details``' columns, flagged expired. Digests as Spark computes
    them, so they equal a record's."""
    roles = layout.roles
    named = rows.rename_columns([roles.get(n, n) for n in rows.column_names])
    # Vectorized over the whole table first: almost always no row names a deleted record.
    gone = pc.and_(
        rows["typed"], accountable(named, ("detail_partition", "detail_offset"), earliest, board)
    )
    chosen = named.filter(gone)
    have = {(p, o) for p, o in known}
    positions = zip(
        chosen["detail_partition"].to_pylist(), chosen["detail_offset"].to_pylist(), strict=True
    )
    chosen = rows.filter(gone).filter(pa.array([at not in have for at in positions], pa.bool_()))
    if chosen.num_rows == 0:
        return empty_details(layout.key_type)
    return _as_details(spark.createDataFrame(chosen), layout).toArrow()


def _as_details(rows: DataFrame, layout: ReconcileLayout) -> DataFrame:
    """Table rows as ``readers.details`` records, flagged expired."""
    record = rows.select(F.struct(*[F.col(c) for c in rows.columns]).alias("r"), "*")
    column_of = {role: column for column, role in layout.roles.items()}

    def role(name: str) -> Column:
        return F.col(column_of[name]).alias(name)

    board_id, member_id = F.col(layout.id_column), F.col(layout.table_key_column)
    return record.select(
        role("board_id"),
        role("member_id"),
        role("source_partition"),
        role("source_offset"),
        role("detail_partition"),
        role("detail_offset"),
        readers.content_digest(layout).alias("digest"),
        readers.board_digest(layout, board_id, "r").alias("board_digest"),
        role("member_partition"),
        role("member_offset"),
        readers.member_digest(layout, member_id, "r").alias("member_digest"),
        F.lit(True).alias(EXPIRED),
    )


def empty_details(key_type: str) -> pa.Table:
    """No records, in ``readers.details``' columns and types, flagged expired."""
    return flagged(pa.Table.from_batches([], digest_ledger.details_schema(key_type)), True)


def below(rows: pa.Table, position: tuple[str, str], ends: dict[int, int]) -> pa.Array:
    """:func:`boardstream.reconcile.checks.sql.below` on Arrow columns (NULL positions: false)."""
    partition, offset = rows[position[0]], rows[position[1]]
    result = pa.array([False] * rows.num_rows, pa.bool_())
    for p, end in ends.items():
        here = pc.and_(pc.equal(partition, p), pc.less(offset, end))
        result = pc.or_(result, pc.fill_null(here, False))
    return result
