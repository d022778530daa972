"""``board_detail`` against ``board-detail``: every table row, whatever position it claims.

Each row names the ``board-detail`` record it was loaded from (``detail_partition``,
``detail_offset``). It must equal that record (board, content and provenance, by digest), and
that record must be its board's newest once the sink has committed the newest; every board whose
newest record the sink has committed must have exactly one row, unless the sink dead-lettered
that record.

One shuffle by board id carries the common case: a board's single row is its newest record.
Only the rest (a duplicate, a row of another record or of a board board-detail does not hold, a
row the sink loaded from a batch it has not committed yet) is drilled into, row by row, against
the record at the position it claims.

A live sink goes on loading while a run reads: a row may name a record written after the
snapshot. Such a row (past the snapshot's end, below the end listed once the table was read:
``TableRead.detail_end``) is ``loaded_ahead``, and its board is left to the next run, which holds
that record; a row past the later end names no record at all and stays ``extra_in_table``.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from boardstream.spark.columns import below

NULL_BOARD_ID = "(null board_id)"
_POSITION = ("detail_partition", "detail_offset")
# What the drill needs of a board of per_board.
DRILLED = (
    "board_id",
    "n_detail",
    "settled",
    "newest_detail_partition",
    "newest_detail_offset",
    "newest_sink_dead_lettered",
)


def per_board(
    details: DataFrame,
    table: DataFrame,
    sink_end: dict[int, int],
    sink_dead_letters: DataFrame,
    detail_ends: tuple[dict[int, int], dict[int, int]],
) -> DataFrame:
    """Per board: its records and rows, its newest record (``settled`` when the sink had
    committed it; ``sink_dead_lettered`` when the sink put it in the DLQ), for a board with one
    row that row's position and digest, and whether a row of it was loaded ahead of the run
    (``ahead``: at or past the first of ``detail_ends``, the snapshot's, below the second, listed
    after the table was read). Fixed-width aggregates only, so Spark aggregates in a hash map
    rather than by sorting."""
    marked = details.join(
        F.broadcast(sink_dead_letters.withColumn("sink_dead_lettered", F.lit(True))),
        list(_POSITION),
        "left",
    ).select(
        F.lit("detail").alias("holder"),
        "board_id",
        *_POSITION,
        "digest",
        F.coalesce("sink_dead_lettered", F.lit(False)).alias("sink_dead_lettered"),
        F.lit(False).alias("ahead"),
    )
    snapshot_end, listed_end = detail_ends
    partition, offset = F.col("detail_partition"), F.col("detail_offset")
    rows = table.select(
        F.lit("table").alias("holder"),
        "board_id",
        *_POSITION,
        "digest",
        F.lit(False).alias("sink_dead_lettered"),
        F.coalesce(
            ~below(partition, offset, snapshot_end) & below(partition, offset, listed_end),
            F.lit(False),  # a row without a position is drilled
        ).alias("ahead"),
    )
    holder = F.col("holder")
    is_detail, is_row = holder == "detail", holder == "table"

    def newest(column: str) -> Column:
        return F.max_by(F.when(is_detail, F.col(column)), F.when(is_detail, F.col("detail_offset")))

    def of_row(column: str) -> Column:
        return F.min(F.when(is_row, F.col(column)))

    boards = (
        marked.unionByName(rows)
        .groupBy("board_id")
        .agg(
            F.count_if(is_detail).alias("n_detail"),
            F.count_if(is_row).alias("n_table"),
            F.bool_or("ahead").alias("ahead"),
            *[newest(c).alias(f"newest_{c}") for c in (*_POSITION, "digest", "sink_dead_lettered")],
            *[of_row(c).alias(f"row_{c}") for c in (*_POSITION, "digest")],
        )
    )
    newest_position = F.col("newest_detail_partition"), F.col("newest_detail_offset")
    settled = (F.col("n_detail") > 0) & below(*newest_position, sink_end)
    row_is_newest = (F.col("n_table") == 1) & reduce(
        lambda a, b: a & b,
        [F.col(f"row_{c}") == F.col(f"newest_{c}") for c in (*_POSITION, "digest")],
    )
    drill = (F.col("n_table") > 0) & ~F.coalesce(row_is_newest, F.lit(False)) & ~F.col("ahead")
    return boards.select("*", settled.alias("settled"), drill.alias("drill"))


def board_checks() -> dict[str, Column]:
    """Conditions on :func:`per_board` rows. A board loaded ahead is one row the table
    holds (``loaded_ahead``, among the rows Great Expectations counts), checked next run."""
    n_table, n_detail, settled = F.col("n_table"), F.col("n_detail"), F.col("settled")
    ahead = F.col("ahead")
    loadable = settled & ~F.col("newest_sink_dead_lettered")
    return {
        "duplicates": n_table > 1,
        "missing_in_table": loadable & (n_table == 0),
        "expected_table_rows": (n_detail > 0) & (loadable | (n_table > 0)) & ~ahead,
        "sink_dead_lettered": settled & F.col("newest_sink_dead_lettered"),
        "not_yet_loaded": (n_detail > 0) & ~settled & ~ahead,
        "loaded_ahead": ahead,
    }


def drilled_rows(
    boards: DataFrame,
    table: DataFrame,
    details: DataFrame,
    earliest: dict[int, int],
    latest: dict[int, int],
) -> DataFrame:
    """(kind, board_id) for each row of a drilled board that is wrong: it claims a record
    retention has deleted and no evidence keeps, of a board with no record left
    (``unverifiable_in_table``: reported, as a board whose records all expired is not
    foreign; a kept copy is checked as the record; with a newer record the sink committed,
    the row is stale whatever became of its own), a position that does not exist or a board
    board-detail does not hold (``extra_in_table``), a record that is not this row
    (``mismatched``: other board or content), or an older record of its board than the
    newest one the sink committed (``stale_in_table``)."""
    drilled = boards.where("drill").select(*DRILLED)
    records = details.select(
        *_POSITION,
        F.col("board_id").alias("record_board_id"),
        F.col("digest").alias("record_digest"),
        F.lit(True).alias("record_found"),
    )
    rows = table.join(drilled, "board_id").join(records, list(_POSITION), "left")
    partition, offset = F.col("detail_partition"), F.col("detail_offset")
    exists = (offset >= 0) & below(partition, offset, latest)
    expired = below(partition, offset, earliest)
    same_record = F.col("record_board_id").eqNullSafe(F.col("board_id")) & F.col(
        "record_digest"
    ).eqNullSafe(F.col("digest"))
    newest = (partition == F.col("newest_detail_partition")) & (
        offset == F.col("newest_detail_offset")
    )
    stale = F.col("settled") & ~F.col("newest_sink_dead_lettered") & ~newest
    unverifiable = F.when(F.col("n_detail") == 0, "unverifiable_in_table").when(
        stale, "stale_in_table"
    )
    kind = (
        # A type_mismatch already: its nulled values would differ from anything.
        F.when(~F.col("typed"), F.lit(None).cast("string"))
        .when(exists & expired & F.col("record_found").isNull(), unverifiable)
        .when(~exists | (F.col("n_detail") == 0), "extra_in_table")
        .when(~same_record, "mismatched")
        .when(stale, "stale_in_table")
    )
    return rows.select(kind.alias("kind"), "board_id").where(F.col("kind").isNotNull())
