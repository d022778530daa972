"""The balance of the join: every source position it has read is in exactly one outcome.

A board is identified by its position (partition, offset) in ``board``, which every output
names as provenance: ``board-detail`` and ``board-unmatched`` records carry it, a dead letter
its ``partition``/``offset``, and a board still waiting for its member is read from the join's
own state store. One window over the positions of all five holders tells, for each source
position, which outcomes hold it; each position read by the join is then classed once, so

    read = joined + unmatched + dead_lettered + pending + missing + expired_unseen + conflicting

holds per partition by construction, and a position held by two outcomes (``conflicting``) or an
output the join cannot have written (``extra``) is a finding rather than a double count.

An output record its topic has deleted still holds its position where evidence of it is kept
(:mod:`.expired`, flagged ``expired``); a position in no outcome while some output records were
deleted unread is ``expired_unseen`` rather than ``missing``.

Outputs the join has not committed yet are expected from the batch under way: of the positions
it reads (``under_way_to``: up to the next batch's logged end, or what a real-time batch may have
read), and of a board pending in the snapshot's state, which it may have joined since. Without
a batch under way, such an output is ``extra`` and such a board ``conflicting``.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from boardstream.reconcile.reads.expired import EXPIRED
from boardstream.spark.columns import any_of, below

OUTCOMES = ("joined", "unmatched", "dead_lettered", "pending")
HOLDERS = ("source", *OUTCOMES)


def holdings(holders: dict[str, DataFrame]) -> DataFrame:
    """Every record of every holder (holder, board_id, source position, and where the holder
    has them the board fields' digest and the whole record's), with how many records each
    holder has at its position (``n_<holder>``), the source's board id and digest there,
    whether the record is its holder's first at that position, and how many different joined
    records the position has."""
    holder = F.col("holder")
    position = Window.partitionBy("source_partition", "source_offset").orderBy("holder")
    whole = position.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)

    def column(frame: DataFrame, name: str) -> Column | str:
        return name if name in frame.columns else F.lit(None).cast("bigint").alias(name)

    def expired(frame: DataFrame) -> Column:
        """Whether the record is evidence of one its topic deleted (:mod:`.expired`)."""
        flag = F.col(EXPIRED) if EXPIRED in frame.columns else F.lit(None)
        return F.coalesce(flag.cast("boolean"), F.lit(False)).alias(EXPIRED)

    tagged = [
        frame.select(
            F.lit(name).alias("holder"),
            "board_id",
            "source_partition",
            "source_offset",
            column(frame, "board_digest"),
            column(frame, "digest"),
            expired(frame),
        )
        for name, frame in holders.items()
    ]
    # A dead letter names no board (its record could not be parsed): label it by position.
    label = F.concat(
        F.lit("board["), F.col("source_partition"), F.lit("]@"), F.col("source_offset")
    )
    return reduce(DataFrame.unionByName, tagged).select(
        "holder",
        F.coalesce("board_id", label).alias("board_id"),
        "source_partition",
        "source_offset",
        "board_digest",
        *[F.count_if(holder == name).over(whole).alias(f"n_{name}") for name in HOLDERS],
        F.count_if(EXPIRED).over(whole).alias("n_expired"),
        F.max(F.when(holder == "source", F.col("board_id"))).over(whole).alias("source_board"),
        F.max(F.when(holder == "source", F.col("board_digest"))).over(whole).alias("source_digest"),
        (~F.lag("holder").over(position).eqNullSafe(holder)).alias("first"),
        # Replays of a join are exact copies: distinct joined contents at one position are not.
        F.size(F.collect_set(F.when(holder == "joined", F.col("digest"))).over(whole)).alias(
            "joined_versions"
        ),
    )


def checks(
    join_end: dict[int, int],
    earliest: dict[int, int],
    under_way_to: dict[int, int] | None,
    unseen: bool = False,
) -> dict[str, Column]:
    """Conditions on the holdings' rows: the balance's classes (on source rows) and the
    position findings. ``under_way_to``: how far the batch under way reads (None: none is);
    ``unseen``: output records were deleted before any run read them (:mod:`.expired`)."""
    holder = F.col("holder")
    partition, offset = F.col("source_partition"), F.col("source_offset")
    read = below(partition, offset, join_end)
    outputs = [F.col(f"n_{name}") > 0 for name in ("joined", "unmatched", "dead_lettered")]
    held_by_outputs = reduce(lambda a, b: a + b, [o.cast("int") for o in outputs])
    waiting = F.col("n_pending") > 0
    held = held_by_outputs + waiting.cast("int")
    if under_way_to is not None:  # a board pending in the snapshot's state may be resolved since
        held = F.when(waiting & (held_by_outputs == 1), 1).otherwise(held)
    source = holder == "source"
    # Replays of a join are exact copies: different joined records at one position conflict.
    conflict = (held > 1) | (F.col("joined_versions") > 1)
    single = source & read & (held == 1) & ~conflict
    is_output = holder.isin("joined", "unmatched", "dead_lettered")
    # A source board below the topic's earliest offset was deleted by retention: its outputs
    # can no longer be checked against it, which is reported, not called extra.
    retained = any_of((partition == p) & (offset >= start) for p, start in earliest.items())
    other_board = holder.isin("joined", "unmatched") & ~F.col("board_id").eqNullSafe(
        F.col("source_board")
    )
    # Positions past what the join has read, and past the batch under way: no output yet.
    unread = ~below(partition, offset, join_end if under_way_to is None else under_way_to)
    # An output whose board fields are not its source board's: the join copies them verbatim.
    altered = (
        holder.isin("joined", "unmatched")
        & (F.col("n_source") > 0)
        & ~other_board
        & ~F.col("board_digest").eqNullSafe(F.col("source_digest"))
    )
    return {
        "source": source,
        "read": source & read,
        "not_yet_read": source & ~read,
        "joined": single & (F.col("n_joined") > 0),
        "unmatched": single & (F.col("n_unmatched") > 0),
        "dead_lettered": single & (F.col("n_dead_lettered") > 0),
        "pending": single & waiting & (held_by_outputs == 0),
        "missing": source & read & (held == 0) & F.lit(not unseen),
        "expired_unseen": source & read & (held == 0) & F.lit(unseen),
        "conflicting": source & read & conflict,
        "extra": (is_output | (holder == "pending"))
        & retained
        & ((F.col("first") & ((F.col("n_source") == 0) | (is_output & unread))) | other_board),
        "altered_output": altered,
        "source_expired": is_output & ~retained & F.col("first"),
        # An outcome that rests on a record its topic deleted: reported, not failed.
        "expired_evidence": single & (F.col("n_expired") > 0),
        "topic_replays": is_output & ~F.col("first") & ~other_board,
    }
