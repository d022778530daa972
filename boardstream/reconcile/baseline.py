"""What a full run leaves the incremental runs (#22): every record it read, as its digest
projection in the digest ledger, and the offsets up to which the ledger now holds each topic.

An incremental run then reads only the records past those offsets and looks the older ones up
by key. Written in the caller's transaction, so the ledger and the run's verdict commit
together or not at all.
"""

from __future__ import annotations

import logging

import pyarrow as pa
from pyspark.sql import DataFrame
from sqlalchemy.engine import Connection

from boardstream.reconcile import digest_ledger
from boardstream.reconcile.checks import CheckInputs
from boardstream.reconcile.snapshot import Snapshot
from boardstream.settings import Settings

log = logging.getLogger(__name__)


def record(
    connection: Connection, inputs: CheckInputs, settings: Settings, snapshot: Snapshot
) -> dict[str, int]:
    """Append the records of ``inputs`` (the topics as of ``snapshot``) to the digest ledger
    and advance its cursor to the snapshot's end offsets; returns the rows given per kind."""
    outputs = {
        "joined": inputs.details,
        "unmatched": inputs.unmatched,
        "dead_lettered": inputs.board_dead_letters,
    }
    written = {
        "sources": digest_ledger.append(
            connection, digest_ledger.reconcile_source, inputs.sources.toArrow()
        ),
        **{
            holder: digest_ledger.append(
                connection,
                digest_ledger.reconcile_output,
                digest_ledger.outputs(holder, frame.toArrow()),
            )
            for holder, frame in outputs.items()
        },
        "members": digest_ledger.append(
            connection, digest_ledger.reconcile_member, inputs.members.toArrow()
        ),
        "refused": digest_ledger.append(
            connection,
            digest_ledger.reconcile_refused,
            pa.concat_tables(
                [
                    _refused(settings.board_detail_topic, inputs.sink_dead_letters, "detail"),
                    _refused(settings.member_topic, inputs.refused_members, "member"),
                ]
            ),
        ),
    }
    digest_ledger.advance(connection, snapshot.latest)
    log.info("digest ledger: %s", ", ".join(f"{n:,} {kind}" for kind, n in written.items()))
    return written


def _refused(topic: str, frame: DataFrame, prefix: str) -> pa.Table:
    """Positions of ``topic`` a job dead-lettered (``<prefix>_partition``/``_offset``), as
    ``reconcile_refused`` rows."""
    positions = frame.toArrow()
    return pa.table(
        {
            "source_topic": pa.array([topic] * positions.num_rows, pa.string()),
            "source_partition": positions.column(f"{prefix}_partition").cast(pa.int32()),
            "source_offset": positions.column(f"{prefix}_offset").cast(pa.int64()),
        }
    )
