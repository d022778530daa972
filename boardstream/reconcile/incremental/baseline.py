"""The records a run adds to the digest ledger (#22), and how far the ledger then holds each
topic: a full run adds every record it read, an incremental run the records past the cursor.

An incremental run then reads only the records past those offsets and looks the older ones up
by key. Written in the caller's transaction, so the ledger and the run's verdict commit
together or not at all.
"""

from __future__ import annotations

import logging

from sqlalchemy.engine import Connection

from boardstream.reconcile.checks.spark_checks import Records
from boardstream.reconcile.incremental import digest_ledger
from boardstream.reconcile.reads.snapshot import Offsets

log = logging.getLogger(__name__)


def record(
    connection: Connection, records: Records, held_to: Offsets, full: bool = False
) -> dict[str, int]:
    """Append ``records`` to the digest ledger and advance its cursor to ``held_to`` (the end
    offsets the records were read to; a ``full`` run's set it there exactly,
    :func:`digest_ledger.rebase`); returns the rows given per kind."""
    outputs = {
        "joined": records.details,
        "unmatched": records.unmatched,
        "dead_lettered": records.dead_letters,
    }
    written = {
        "sources": digest_ledger.append(
            connection, digest_ledger.reconcile_source, records.sources
        ),
        **{
            holder: digest_ledger.append(
                connection, digest_ledger.reconcile_output, digest_ledger.outputs(holder, rows)
            )
            for holder, rows in outputs.items()
        },
        "members": digest_ledger.append(
            connection, digest_ledger.reconcile_member, records.members
        ),
        "refused": digest_ledger.append(
            connection, digest_ledger.reconcile_refused, records.refused
        ),
    }
    (digest_ledger.rebase if full else digest_ledger.advance)(connection, held_to)
    log.info("digest ledger: %s", ", ".join(f"{n:,} {kind}" for kind, n in written.items()))
    return written
