"""``board_detail`` against ``board-detail``: every table row, whatever position it claims.

Each row names the ``board-detail`` record it was loaded from (``detail_partition``,
``detail_offset``). It must equal that record (board, content and provenance, by digest), and
that record must be its board's newest once the sink has committed the newest; every board whose
newest record the sink has committed must have exactly one row, unless the sink dead-lettered
that record. A board's newest is the sink's (``sink.table.NEWEST_ORDER``): its newest version in
``board``, not its last record in ``board-detail``, which the join (keyed by member) may write
out of the source's order.

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

from boardstream.reconcile.checks.sql import below, position_order, same_position

NULL_BOARD_ID = "(null board_id)"
_POSITION = ("detail_partition", "detail_offset")
# What a board's newest record is taken with: its position, digest and whether the sink
# dead-lettered it.
_COPY = (*_POSITION, "digest", "sink_dead_lettered")
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
    sink_end: dict[int, int],
    detail_ends: tuple[dict[int, int], dict[int, int]],
) -> str:
    """Per board of the views ``details`` and ``table_rows`` (with ``sink_dead_letters``):
    its records and rows, its newest record (``settled`` when the sink had committed it
    (``sink_end``); ``sink_dead_lettered`` when the sink put it in the DLQ), for a board with
    one row that row's position and digest, whether a row of it was loaded ahead of the
    run (``ahead``: at or past the first of ``detail_ends``, the snapshot's, below the second,
    listed after the table was read), whether its last record written is an older version than
    its newest (``superseded``) and whether its versions name more than one ``board`` partition
    (``moved_partition``). Fixed-width aggregates only, so Spark aggregates in a hash map
    rather than by sorting."""
    snapshot_end, listed_end = detail_ends
    ahead = (
        f"NOT {below('detail_partition', 'detail_offset', snapshot_end)} "
        f"AND {below('detail_partition', 'detail_offset', listed_end)}"
    )
    # The newest record is the sink's (sink.table.NEWEST_ORDER): the newest version in board,
    # its last copy in board-detail. Two steps, as neither order alone is one bigint: each
    # version's last copy, then each board's newest version.
    version = position_order("source_partition", "source_offset")
    copy = position_order("detail_partition", "detail_offset")
    last_copies = ", ".join(f"max_by({c}, copy) AS {c}" for c in _COPY)

    def of(holder: str, column: str) -> str:
        return f"CASE WHEN holder = '{holder}' THEN {column} END"

    newest_columns = ", ".join(
        f"max_by({of('detail', c)}, {of('detail', 'version')}) AS newest_{c}" for c in _COPY
    )
    row_columns = ", ".join(f"min({of('table', c)}) AS row_{c}" for c in (*_POSITION, "digest"))
    row_is_newest = " AND ".join(
        ["n_table = 1", *(f"row_{c} = newest_{c}" for c in (*_POSITION, "digest"))]
    )
    settled = below("newest_detail_partition", "newest_detail_offset", sink_end)
    return f"""
        SELECT
            *,
            n_detail > 0 AND {settled} AS settled,
            n_table > 0 AND NOT coalesce({row_is_newest}, FALSE) AND NOT ahead AS drill
        FROM (
            SELECT
                board_id,
                CAST(sum(CASE WHEN holder = 'detail' THEN n ELSE 0 END) AS BIGINT) AS n_detail,
                CAST(sum(CASE WHEN holder = 'table' THEN n ELSE 0 END) AS BIGINT) AS n_table,
                bool_or(ahead) AS ahead,
                {newest_columns},
                {row_columns},
                max_by({of("detail", "version")}, {of("detail", "last_copy")})
                    <> max({of("detail", "version")}) AS superseded,
                min(low_partition) <> max(high_partition) AS moved_partition
            FROM (
                SELECT
                    board_id,
                    holder,
                    version,
                    count(*) AS n,
                    bool_or(ahead) AS ahead,
                    {last_copies},
                    max(copy) AS last_copy,
                    min(source_partition) AS low_partition,
                    max(source_partition) AS high_partition
                FROM (
                    -- One shuffle by board carries both steps.
                    SELECT /*+ REPARTITION(board_id) */
                        *,
                        {of("detail", version)} AS version,
                        {copy} AS copy
                    FROM ({_both_sides(ahead)}) AS both_sides
                ) AS ordered
                GROUP BY board_id, holder, version
            ) AS versions
            GROUP BY board_id
        ) AS counted
    """


def _both_sides(ahead: str) -> str:
    """The records of ``details`` (with whether the sink dead-lettered each) and the rows of
    ``table_rows`` (with whether each was loaded ahead), in one frame."""
    return f"""
        SELECT /*+ BROADCAST(dead) */
            'detail' AS holder,
            details.board_id,
            details.source_partition,
            details.source_offset,
            details.detail_partition,
            details.detail_offset,
            details.digest,
            coalesce(dead.sink_dead_lettered, FALSE) AS sink_dead_lettered,
            FALSE AS ahead
        FROM details
        LEFT JOIN (
            SELECT detail_partition, detail_offset, TRUE AS sink_dead_lettered
            FROM sink_dead_letters
        ) AS dead
            ON {same_position("details", "dead", "detail")}
        UNION ALL
        SELECT
            'table' AS holder,
            board_id,
            CAST(NULL AS INT) AS source_partition,
            CAST(NULL AS BIGINT) AS source_offset,
            detail_partition,
            detail_offset,
            digest,
            FALSE AS sink_dead_lettered,
            -- a row without a position is drilled
            coalesce({ahead}, FALSE) AS ahead
        FROM table_rows
    """


def board_checks() -> dict[str, str]:
    """Conditions on :func:`per_board` rows. A board loaded ahead is one row the table
    holds (``loaded_ahead``, among the rows Great Expectations counts), checked next run."""
    loadable = "settled AND NOT newest_sink_dead_lettered"
    return {
        "duplicates": "n_table > 1",
        "missing_in_table": f"{loadable} AND n_table = 0",
        "expected_table_rows": f"n_detail > 0 AND ({loadable} OR n_table > 0) AND NOT ahead",
        "sink_dead_lettered": "settled AND newest_sink_dead_lettered",
        "not_yet_loaded": "n_detail > 0 AND NOT settled AND NOT ahead",
        "loaded_ahead": "ahead",
        "superseded": "superseded",
        "moved_partition": "moved_partition",
    }


def drilled_rows(earliest: dict[int, int], latest: dict[int, int]) -> str:
    """(kind, board_id) for each row of a drilled board (of the view ``boards``:
    :func:`per_board`) that is wrong: it claims a record retention has deleted and no evidence
    keeps, of a board with no record left (``unverifiable_in_table``: reported, as a board
    whose records all expired is not foreign; a kept copy is checked as the record; with a
    newer record the sink committed, the row is stale whatever became of its own), a position
    that does not exist or a board board-detail does not hold (``extra_in_table``), a record
    that is not this row (``mismatched``: other board or content), or another record of its
    board than the newest one the sink committed (``stale_in_table``: an older version in
    ``board``, whatever its offset in ``board-detail``)."""
    partition, offset = "table_rows.detail_partition", "table_rows.detail_offset"
    exists = f"{offset} >= 0 AND {below(partition, offset, latest)}"
    expired = below(partition, offset, earliest)
    same_record = "record_board_id <=> table_rows.board_id AND record_digest <=> table_rows.digest"
    newest = f"{partition} = newest_detail_partition AND {offset} = newest_detail_offset"
    stale = f"settled AND NOT newest_sink_dead_lettered AND NOT ({newest})"
    drilled = ", ".join(DRILLED)
    return f"""
        SELECT kind, board_id
        FROM (
            SELECT
                CASE
                    -- A type_mismatch already: its nulled values would differ from anything.
                    WHEN NOT table_rows.typed THEN CAST(NULL AS STRING)
                    WHEN ({exists}) AND {expired} AND record_found IS NULL THEN
                        CASE
                            WHEN n_detail = 0 THEN 'unverifiable_in_table'
                            WHEN {stale} THEN 'stale_in_table'
                        END
                    WHEN NOT ({exists}) OR n_detail = 0 THEN 'extra_in_table'
                    WHEN NOT ({same_record}) THEN 'mismatched'
                    WHEN {stale} THEN 'stale_in_table'
                END AS kind,
                table_rows.board_id
            FROM table_rows
            JOIN (SELECT {drilled} FROM boards WHERE drill) AS drilled
                ON table_rows.board_id = drilled.board_id
            LEFT JOIN (
                SELECT
                    detail_partition,
                    detail_offset,
                    board_id AS record_board_id,
                    digest AS record_digest,
                    TRUE AS record_found
                FROM details
            ) AS records
                ON {same_position("table_rows", "records", "detail")}
        ) AS drilled_rows
        WHERE kind IS NOT NULL
    """
