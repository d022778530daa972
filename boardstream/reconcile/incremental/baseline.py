"""The records a run adds to the digest ledger (#22), and how far the ledger then holds each
topic: a full run adds every record it read, an incremental run the records past the cursor.

An incremental run then reads only the records past those offsets and looks the older ones up
by key. Written in the caller's transaction, so the ledger and the run's verdict commit
together or not at all; a full run's records are staged ahead of it (:func:`stage`), so that
its transaction copies them in rather than holding SQLite's write lock for their conversion.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from boardstream.reconcile.checks.spark_checks import Records
from boardstream.reconcile.incremental.digest_ledger import DigestLedger, conform
from boardstream.reconcile.reads.snapshot import Offsets

log = logging.getLogger(__name__)


def record(
    connection: Connection, ledger: DigestLedger, records: Records, held_to: Offsets
) -> dict[str, int]:
    """Append an incremental run's ``records`` to the digest ledger and advance its cursor to
    ``held_to`` (the end offsets the records were read to); returns the rows given per
    kind."""
    written = {
        kind: ledger.append(connection, table, rows)
        for kind, (table, rows) in _ledger_rows(ledger, records).items()
    }
    ledger.advance(connection, held_to)
    _logged(written)
    return written


@dataclass(frozen=True)
class Staged:
    """A full run's records staged for the digest ledger (:func:`stage`): a staged table per
    ledger table, and the rows given per kind."""

    tables: dict[sa.Table, sa.Table]  # ledger table -> its staged rows
    written: dict[str, int]


def stage(engine: Engine, ledger: DigestLedger, records: Records) -> Staged:
    """A full run's ``records`` staged ahead of its transaction (:mod:`boardstream.staging`),
    one staged table per ledger table; :func:`record_staged` moves them in."""
    per_table: dict[sa.Table, list[pa.Table]] = {}
    written = {}
    for kind, (table, rows) in _ledger_rows(ledger, records).items():
        per_table.setdefault(table, []).append(conform(table, rows))
        written[kind] = rows.num_rows
    tables = {
        table: ledger.stage(engine, table, pa.concat_tables(parts))
        for table, parts in per_table.items()
    }
    return Staged(tables, written)


def record_staged(
    connection: Connection, ledger: DigestLedger, staged: Staged, held_to: Offsets
) -> dict[str, int]:
    """A full run's staged records into the digest ledger, its cursor set to ``held_to``
    exactly (:meth:`DigestLedger.rebase`); returns the rows given per kind. In the caller's
    transaction."""
    for table, rows in staged.tables.items():
        ledger.append_staged(connection, rows, table)
    ledger.rebase(connection, held_to)
    _logged(staged.written)
    return staged.written


def _ledger_rows(ledger: DigestLedger, records: Records) -> dict[str, tuple[sa.Table, pa.Table]]:
    """Each kind of record as its ledger table's rows."""
    outputs = {
        "joined": records.details,
        "unmatched": records.unmatched,
        "dead_lettered": records.dead_letters,
    }
    return {
        "sources": (ledger.source_table, records.sources),
        **{
            holder: (ledger.output_table, ledger.outputs(holder, rows))
            for holder, rows in outputs.items()
        },
        "members": (ledger.member_table, records.members),
        "refused": (ledger.refused_table, records.refused),
    }


def _logged(written: dict[str, int]) -> None:
    log.info("digest ledger: %s", ", ".join(f"{n:,} {kind}" for kind, n in written.items()))
