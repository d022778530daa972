"""The records a run adds to the digest ledger (#22), and how far the ledger then holds each
topic: a full run adds every record it read, an incremental run the records past the cursor.

An incremental run then reads only the records past those offsets and looks the older ones up
by key. Written in the caller's transaction, so the ledger and the run's verdict commit
together or not at all.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from sqlalchemy.engine import Connection

from boardstream.reconcile import digest_ledger
from boardstream.reconcile.evidence import EXPIRED
from boardstream.reconcile.snapshot import Offsets
from boardstream.settings import Settings

if TYPE_CHECKING:  # checks imports this module
    from boardstream.reconcile.checks import CheckInputs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Records:
    """Records in the readers' columns (outputs with their own record position), as Arrow."""

    sources: pa.Table
    details: pa.Table
    unmatched: pa.Table
    dead_letters: pa.Table  # of board records
    refused: pa.Table  # reconcile_refused rows: the sink's of board-detail, the join's of member
    members: pa.Table

    @classmethod
    def of(cls, inputs: CheckInputs, settings: Settings) -> Records:
        """A full run's inputs, every record of them."""

        def refused(topic: str, frame: DataFrame) -> DataFrame:
            return frame.toDF("source_partition", "source_offset").select(
                F.lit(topic).alias("source_topic"), "source_partition", "source_offset"
            )

        def read(frame: DataFrame) -> pa.Table:
            """The records read from the topic: evidence of deleted ones is the ledger's
            already, or a table row's, which no run read as a record."""
            return frame.where(~F.col(EXPIRED)).drop(EXPIRED).toArrow()

        return cls(
            sources=inputs.sources.toArrow(),
            details=read(inputs.details),
            unmatched=read(inputs.unmatched),
            dead_letters=read(inputs.board_dead_letters),
            refused=refused(settings.board_detail_topic, inputs.sink_dead_letters)
            .unionByName(refused(settings.member_topic, inputs.refused_members))
            .toArrow(),
            members=inputs.members.toArrow(),
        )


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
