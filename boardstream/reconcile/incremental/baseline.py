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
from boardstream.reconcile.incremental import digest_ledger
from boardstream.reconcile.reads.snapshot import Offsets

log = logging.getLogger(__name__)


def record(connection: Connection, records: Records, held_to: Offsets) -> dict[str, int]:
    """Append an incremental run's ``records`` to the digest ledger and advance its cursor to
    ``held_to`` (the end offsets the records were read to); returns the rows given per
    kind."""
    written = {
        kind: digest_ledger.append(connection, table, rows)
        for kind, (table, rows) in _ledger_rows(records).items()
    }
    digest_ledger.advance(connection, held_to)
    _logged(written)
    return written


@dataclass(frozen=True)
class Staged:
    """A full run's records staged for the digest ledger (:func:`stage`): a staged table per
    ledger table, and the rows given per kind."""

    tables: dict[str, sa.Table]  # ledger table name -> its staged rows
    written: dict[str, int]


def stage(engine: Engine, records: Records) -> Staged:
    """A full run's ``records`` staged ahead of its transaction (:mod:`boardstream.staging`),
    one staged table per ledger table; :func:`record_staged` moves them in."""
    per_table: dict[str, list[pa.Table]] = {}
    written = {}
    for kind, (table, rows) in _ledger_rows(records).items():
        per_table.setdefault(table.name, []).append(digest_ledger.conform(table, rows))
        written[kind] = rows.num_rows
    tables = {
        name: digest_ledger.stage(engine, name, pa.concat_tables(parts))
        for name, parts in per_table.items()
    }
    return Staged(tables, written)


def record_staged(connection: Connection, staged: Staged, held_to: Offsets) -> dict[str, int]:
    """A full run's staged records into the digest ledger, its cursor set to ``held_to``
    exactly (:func:`digest_ledger.rebase`); returns the rows given per kind. In the caller's
    transaction."""
    for name, table in staged.tables.items():
        digest_ledger.append_staged(connection, table, name)
    digest_ledger.rebase(connection, held_to)
    _logged(staged.written)
    return staged.written


def _ledger_rows(records: Records) -> dict[str, tuple[sa.Table, pa.Table]]:
    """Each kind of record as its ledger table's rows."""
    outputs = {
        "joined": records.details,
        "unmatched": records.unmatched,
        "dead_lettered": records.dead_letters,
    }
    return {
        "sources": (digest_ledger.reconcile_source, records.sources),
        **{
            holder: (digest_ledger.reconcile_output, digest_ledger.outputs(holder, rows))
            for holder, rows in outputs.items()
        },
        "members": (digest_ledger.reconcile_member, records.members),
        "refused": (digest_ledger.reconcile_refused, records.refused),
    }


def _logged(written: dict[str, int]) -> None:
    log.info("digest ledger: %s", ", ".join(f"{n:,} {kind}" for kind, n in written.items()))
