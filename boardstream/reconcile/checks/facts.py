"""Every check of a snapshot as one SQL query: the rules, written once.

The query reads nine views, one per field of :class:`.spark_checks.CheckInputs` (``table`` as
``table_rows``): a full run has Spark run it on its frames (:mod:`.spark_checks`), an
incremental run has DuckDB run it on its Arrow tables (:mod:`.arrow_checks`), so a new
finding is one change here, checked by both. Each row is a fact (FACT_COLUMNS): a check that
holds, keyed by the source position a position check holds on, else by board alone. What a run
counts is an aggregate of them; an incremental run keeps them per key.

The rules live beside what they check: the balance of the join in :mod:`.positions`, the table
against board-detail in :mod:`.table_checks`; here the records against the members they name,
and the join's waiting boards.
"""

from __future__ import annotations

from dataclasses import dataclass

from boardstream.joins.member_table import LATEST
from boardstream.joins.topics import JoinTopics
from boardstream.reconcile.checks import liveness, positions, table_checks
from boardstream.reconcile.checks.sql import below, explode_kinds, same_position
from boardstream.reconcile.reads.snapshot import Snapshot

# The views the query reads, as :class:`.spark_checks.CheckInputs` names its fields.
VIEWS = {
    "sources": "sources",
    "details": "details",
    "unmatched": "unmatched",
    "board_dead_letters": "board_dead_letters",
    "sink_dead_letters": "sink_dead_letters",
    "refused_members": "refused_members",
    "members": "members",
    "table": "table_rows",
    "waiting": "waiting",
}
# The names of :func:`steps`.
STEPS = ("holdings", "classed", "boards")
_NO_POSITION = "CAST(NULL AS INT) AS `partition`, CAST(NULL AS BIGINT) AS `offset`"


@dataclass(frozen=True)
class Bounds:
    """Where the snapshot stands, as the checks need it: its offsets, the table's listed end,
    whether output records were deleted unread, the join's mode and the overdue cutoff."""

    topics: JoinTopics
    snapshot: Snapshot
    detail_end: dict[int, int]  # board-detail's end, listed after the table was read
    unseen: bool  # output records deleted before any run read them (:mod:`.expired`)
    join_mode: str | None
    overdue_before_ms: int  # liveness.overdue_cutoff_ms

    @classmethod
    def of(
        cls,
        topics: JoinTopics,
        snapshot: Snapshot,
        detail_end: dict[int, int],
        unseen: bool,
        join_mode: str | None,
        now_ms: int,
        unmatched_timeout_ms: int,
        stall_after_ms: int,
    ) -> Bounds:
        cutoff = liveness.overdue_cutoff_ms(
            now_ms, unmatched_timeout_ms, stall_after_ms, snapshot.join.began_at_ms
        )
        return cls(topics, snapshot, detail_end, unseen, join_mode, cutoff)


def steps(bounds: Bounds) -> dict[str, str]:
    """The query's named steps, in order, each reading the views and the steps before it:
    the holdings of every source position, their classes, and the per-board frame (read by two
    checks: Spark caches it)."""
    snapshot = bounds.snapshot
    board, detail_topic = bounds.topics.stream, bounds.topics.joined
    queries = (
        positions.holdings(board),
        positions.classed(
            snapshot.join.of(board), snapshot.earliest[board], snapshot.join.under_way_of(board)
        ),
        table_checks.per_board(
            snapshot.sink.of(detail_topic), (snapshot.latest[detail_topic], bounds.detail_end)
        ),
    )
    return dict(zip(STEPS, queries, strict=True))


def found(bounds: Bounds) -> str:
    """Every check that holds, one row each (kind, partition, offset, board_id), over the
    views and :func:`steps`."""
    snapshot = bounds.snapshot
    detail_topic = bounds.topics.joined
    parts = [
        f"SELECT {explode_kinds(positions.checks(bounds.unseen))} AS kind, "
        "source_partition AS `partition`, source_offset AS `offset`, board_id FROM classed",
        f"SELECT {explode_kinds(table_checks.board_checks())} AS kind, {_NO_POSITION}, "
        "board_id FROM boards",
        _board_facts(
            table_checks.drilled_rows(
                snapshot.earliest[detail_topic], snapshot.latest[detail_topic]
            )
        ),
        _board_facts(_member_checks()),
        f"SELECT 'overdue_pending' AS kind, {_NO_POSITION}, board_id FROM waiting "
        f"WHERE arrived_ms < {int(bounds.overdue_before_ms)}",
    ]
    if bounds.join_mode == LATEST:
        parts.append(_board_facts(_stuck(snapshot.join.of(bounds.topics.table))))
    union = "\nUNION ALL\n".join(f"SELECT * FROM ({part}) AS p{i}" for i, part in enumerate(parts))
    return f"""
        SELECT CAST(kind AS STRING) AS kind, CAST(`partition` AS INT) AS `partition`,
            CAST(`offset` AS BIGINT) AS `offset`, CAST(board_id AS STRING) AS board_id
        FROM ({union}) AS found
    """


def query(bounds: Bounds) -> str:
    """:func:`found` with its steps, as one query."""
    named = ",\n".join(f"{name} AS ({step})" for name, step in steps(bounds).items())
    return f"WITH {named}\n{found(bounds)}"


def _board_facts(kinds: str) -> str:
    """Facts keyed by board alone of a query of (kind, board_id): a row without a kind holds
    none."""
    return f"SELECT kind, {_NO_POSITION}, board_id FROM ({kinds}) AS kinds WHERE kind IS NOT NULL"


def _member_checks() -> str:
    """Each board-detail record against the member version it names: a profile other than
    that version's is ``altered_output``; a version compaction has removed cannot be compared,
    but its member must still exist (else ``referential``). A record the sink dead-lettered
    that names no member version (it did not parse: not one the join wrote) is the sink's
    ``sink_dead_lettered``; a dead letter for one that does name a version exempts nothing."""
    return f"""
        SELECT
            CASE
                WHEN version_digest IS NOT NULL
                    AND NOT (details.member_digest <=> version_digest) THEN 'altered_output'
                WHEN version_digest IS NULL AND known IS NULL THEN 'referential'
            END AS kind,
            details.board_id
        FROM details
        LEFT JOIN (
            SELECT member_partition, member_offset, member_digest AS version_digest
            FROM members
        ) AS versions
            ON {same_position("details", "versions", "member")}
        LEFT JOIN (SELECT DISTINCT member_id, TRUE AS known FROM members) AS existing
            ON details.member_id = existing.member_id
        LEFT JOIN (
            SELECT detail_partition, detail_offset, TRUE AS refused FROM sink_dead_letters
        ) AS refused
            ON {same_position("details", "refused", "detail")}
        WHERE refused.refused IS NULL OR details.member_partition IS NOT NULL
    """


def _stuck(member_end: dict[int, int]) -> str:
    """Boards waiting for a member the join has read (below ``member_end``) and holds alive
    (``stuck_pending``): in latest mode a board waits only while its member is missing or
    deleted, so such a board means the join lost its member, and its timer would send it to
    board-unmatched wrongly. A waiting board without a member id is stuck too."""
    read = below("members.member_partition", "members.member_offset", member_end)
    # A member's records share a partition (the key), so its newest is its highest offset.
    newest = "member_offset"
    return f"""
        SELECT 'stuck_pending' AS kind, waiting.board_id
        FROM waiting
        LEFT JOIN (
            SELECT member_id, TRUE AS alive
            FROM (
                SELECT member_id, max_by(tombstone, {newest}) AS deleted
                FROM (
                    SELECT members.*
                    FROM members
                    LEFT ANTI JOIN refused_members
                        ON {same_position("members", "refused_members", "member")}
                    WHERE {read}
                ) AS read_versions
                GROUP BY member_id
            ) AS newest_versions
            WHERE NOT deleted
        ) AS living
            ON waiting.member_id = living.member_id
        WHERE waiting.member_id IS NULL OR living.alive IS NOT NULL
    """
