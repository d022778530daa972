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

from boardstream.reconcile.checks.sql import any_of, below, flag
from boardstream.reconcile.reads.expired import EXPIRED

OUTCOMES = ("joined", "unmatched", "dead_lettered", "pending")
HOLDERS = ("source", *OUTCOMES)
# The views each holder's records come from (:class:`.spark_checks.CheckInputs`' fields).
_VIEWS = {
    "source": "sources",
    "joined": "details",
    "unmatched": "unmatched",
    "dead_lettered": "board_dead_letters",
    "pending": "waiting",
}
# Which holders' records carry the board fields' digest, the whole record's, an expired flag.
_BOARD_DIGEST = ("source", "joined", "unmatched")
_FLAGGED = ("joined", "unmatched", "dead_lettered")
# Each holder's own position of a record (a waiting board has none): a holder's records at one
# source position in the order its topic has them, so which is first (and which a replay or an
# extra) does not depend on the order an engine happens to read them in.
_RECORD = {
    "source": "source",
    "joined": "detail",
    "unmatched": "record",
    "dead_lettered": "record",
}


def holdings(stream_topic: str) -> str:
    """Every record of every holder (holder, board_id, source position, and where the holder
    has them the board fields' digest and the whole record's), with how many records each
    holder has at its position (``n_<holder>``), the source's board id and digest there,
    whether the record is its holder's first there (by its own position in its topic), and
    whether the position has joined records that differ: a query over the holders' views. A
    record naming no id is labelled by its position in ``stream_topic`` (``orders[0]@17``)."""

    def tagged(name: str) -> str:
        board_digest = "board_digest" if name in _BOARD_DIGEST else "CAST(NULL AS BIGINT)"
        digest = "digest" if name == "joined" else "CAST(NULL AS BIGINT)"
        expired = f"coalesce(CAST({EXPIRED} AS BOOLEAN), FALSE)" if name in _FLAGGED else "FALSE"
        record = _RECORD.get(name)
        at = (
            f"{record}_partition AS record_partition, {record}_offset AS record_offset"
            if record
            else "CAST(NULL AS INT) AS record_partition, CAST(NULL AS BIGINT) AS record_offset"
        )
        return (
            f"SELECT '{name}' AS holder, board_id, source_partition, source_offset, "
            f"{board_digest} AS board_digest, {digest} AS digest, {expired} AS {EXPIRED}, "
            f"{at} FROM {_VIEWS[name]}"
        )

    counts = ", ".join(f"count_if(holder = '{name}') OVER whole AS n_{name}" for name in HOLDERS)
    joined_digest = "CASE WHEN holder = 'joined' THEN digest END"
    union = " UNION ALL ".join(tagged(name) for name in HOLDERS)
    # One order for both windows, so one sort serves them.
    order = (
        "PARTITION BY source_partition, source_offset "
        "ORDER BY holder, record_partition, record_offset"
    )
    # A dead letter names no record id (its record could not be parsed): label it by its
    # position, as the liveness checks name a record (a topic name needs no SQL quoting).
    return f"""
        SELECT
            holder,
            coalesce(board_id, concat('{stream_topic}[', source_partition, ']@', source_offset))
                AS board_id,
            source_partition,
            source_offset,
            board_digest,
            {counts},
            count_if({EXPIRED}) OVER whole AS n_expired,
            max(CASE WHEN holder = 'source' THEN tagged.board_id END) OVER whole
                AS source_board,
            max(CASE WHEN holder = 'source' THEN board_digest END) OVER whole
                AS source_digest,
            NOT (lag(holder) OVER ordered <=> holder) AS is_first,
            -- Replays of a join are exact copies: distinct joined contents at one position
            -- are not. Two or more distinct digests, as their least and greatest: a windowed
            -- collect_set (DuckDB's LIST(DISTINCT) over the frame) took 18 GB for 900,000 rows.
            coalesce(
                min({joined_digest}) OVER whole < max({joined_digest}) OVER whole, FALSE
            ) AS joined_versions_differ
        FROM ({union}) AS tagged
        WINDOW
            ordered AS ({order}),
            whole AS ({order} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
    """


def classed(
    join_end: dict[int, int],
    earliest: dict[int, int],
    under_way_to: dict[int, int] | None,
) -> str:
    """The terms the checks are written in, on the rows of :func:`holdings` (the view
    ``holdings``). ``under_way_to``: how far the batch under way reads (None: none is)."""
    read = below("source_partition", "source_offset", join_end)
    by_outputs = " + ".join(
        f"CAST(n_{name} > 0 AS INT)" for name in ("joined", "unmatched", "dead_lettered")
    )
    held = f"({by_outputs}) + CAST(n_pending > 0 AS INT)"
    if under_way_to is not None:  # a board pending in the snapshot's state may be resolved since
        held = f"CASE WHEN n_pending > 0 AND ({by_outputs}) = 1 THEN 1 ELSE {held} END"
    # A source board below the topic's earliest offset was deleted by retention: its outputs
    # can no longer be checked against it, which is reported, not called extra.
    retained = any_of(
        f"source_partition = {int(p)} AND source_offset >= {int(start)}"
        for p, start in sorted(earliest.items())
    )
    # Positions past what the join has read, and past the batch under way: no output yet.
    unread = below(
        "source_partition",
        "source_offset",
        join_end if under_way_to is None else under_way_to,
    )
    return f"""
        SELECT
            *,
            is_source AND is_read AND n_held = 1 AND NOT conflicted AS single
        FROM (
            SELECT
                *,
                -- Different joined records at one position conflict.
                n_held > 1 OR joined_versions_differ AS conflicted
            FROM (
                SELECT
                    *,
                    holder = 'source' AS is_source,
                    {read} AS is_read,
                    {by_outputs} AS held_by_outputs,
                    {held} AS n_held,
                    holder IN ('joined', 'unmatched', 'dead_lettered') AS is_output,
                    {retained} AS retained,
                    holder IN ('joined', 'unmatched') AND NOT (board_id <=> source_board)
                        AS other_board,
                    NOT {unread} AS unread
                FROM holdings
            ) AS terms
        ) AS conflicts
    """


def checks(unseen: bool = False) -> dict[str, str]:
    """Conditions on :func:`classed` rows: the balance's classes (on source rows) and the
    position findings. ``unseen``: output records were deleted before any run read them
    (:mod:`.expired`)."""
    return {
        "source": "is_source",
        "read": "is_source AND is_read",
        "not_yet_read": "is_source AND NOT is_read",
        "joined": "single AND n_joined > 0",
        "unmatched": "single AND n_unmatched > 0",
        "dead_lettered": "single AND n_dead_lettered > 0",
        "pending": "single AND n_pending > 0 AND held_by_outputs = 0",
        "missing": f"is_source AND is_read AND n_held = 0 AND {flag(not unseen)}",
        "expired_unseen": f"is_source AND is_read AND n_held = 0 AND {flag(unseen)}",
        "conflicting": "is_source AND is_read AND conflicted",
        "extra": "(is_output OR holder = 'pending') AND retained AND ("
        "(is_first AND (n_source = 0 OR (is_output AND unread))) OR other_board)",
        # An output whose board fields are not its source board's: the join copies them
        # verbatim.
        "altered_output": "holder IN ('joined', 'unmatched') AND n_source > 0 "
        "AND NOT other_board AND NOT (board_digest <=> source_digest)",
        "source_expired": "is_output AND NOT retained AND is_first",
        # An outcome that rests on a record its topic deleted: reported, not failed.
        "expired_evidence": "single AND n_expired > 0",
        "topic_replays": "is_output AND NOT is_first AND NOT other_board",
    }
