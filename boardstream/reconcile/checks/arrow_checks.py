"""The checks of :func:`.spark_checks.facts` over Arrow tables, for an incremental run's few
records.

An incremental run (#22) checks a few thousand records. In Spark most of its time went to fixed
costs that do not depend on them: a py4j call and an analysis per step of the plans, the
optimizer and planner on their union, a job per stage. Here the same checks run in pandas in
milliseconds; full runs keep Spark.

The definitions stay :mod:`.positions`, :mod:`.table_checks` and :mod:`.spark_checks`: this module
restates them condition for condition, with SQL's semantics where they matter. pandas' nullable
dtypes give NULL's three-valued ``&``, ``|`` and ``~``; a condition that is NULL holds no fact; a
NULL key joins nothing; NULL group keys form one group. ``tests/integration/
test_arrow_checks.py`` holds the two to the same facts on random inputs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

from boardstream.joins.member_table import LATEST
from boardstream.reconcile.checks import liveness
from boardstream.reconcile.checks.positions import HOLDERS
from boardstream.reconcile.checks.spark_checks import ReconcileOptions, with_type_mismatches
from boardstream.reconcile.checks.table_checks import DRILLED
from boardstream.reconcile.reads.expired import EXPIRED
from boardstream.reconcile.reads.readers import TableRead
from boardstream.reconcile.reads.snapshot import Snapshot
from boardstream.reconcile.reads.waiting import waiting_lines
from boardstream.settings import Settings

SOURCE = ["source_partition", "source_offset"]
DETAIL = ["detail_partition", "detail_offset"]
MEMBER = ["member_partition", "member_offset"]
FACTS = pa.schema(
    [
        ("kind", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("board_id", pa.string()),
    ]
)
_NULLABLE = {
    pa.int32(): pd.Int64Dtype(),  # every position column one type, so that joins on them match
    pa.int64(): pd.Int64Dtype(),
    pa.bool_(): pd.BooleanDtype(),
    pa.string(): pd.StringDtype(),
    pa.large_string(): pd.StringDtype(),
}


@dataclass(frozen=True)
class ArrowInputs:
    """:class:`.spark_checks.CheckInputs` as Arrow tables, with the same columns."""

    sources: pa.Table
    details: pa.Table
    unmatched: pa.Table
    board_dead_letters: pa.Table
    sink_dead_letters: pa.Table
    refused_members: pa.Table
    members: pa.Table
    table: pa.Table
    waiting: pa.Table
    table_read: TableRead
    unseen: tuple[str, ...] = ()


def waiting_now(waiting: pa.Table, now_ms: int, options: ReconcileOptions) -> list[str]:
    """:func:`.spark_checks.waiting_now`: the oldest waiting boards as the summary lists them."""
    # Spark's ascending order: NULLs first.
    oldest = waiting.sort_by([(c, "ascending", "at_start") for c in ("arrived_ms", "board_id")])
    if options.examples:
        oldest = oldest.slice(0, options.examples)
    return waiting_lines(
        zip(oldest["board_id"].to_pylist(), oldest["arrived_ms"].to_pylist(), strict=True),
        now_ms,
        options.unmatched_timeout_ms,
    )


def evaluate(
    inputs: ArrowInputs,
    settings: Settings,
    snapshot: Snapshot,
    join_mode: str | None,
    now_ms: int,
    options: ReconcileOptions,
) -> pa.Table:
    """:func:`.spark_checks.evaluate` of ``inputs``: every check that holds, one row each
    (``FACTS``), and the table's type mismatches among them."""
    board, detail_topic = settings.board_topic, settings.board_detail_topic
    details, waiting, members, table = (
        _frame(inputs.details),
        _frame(inputs.waiting),
        _frame(inputs.members),
        _frame(inputs.table),
    )
    held = _holdings(
        {
            "source": _frame(inputs.sources),
            "joined": details,
            "unmatched": _frame(inputs.unmatched),
            "dead_lettered": _frame(inputs.board_dead_letters),
            "pending": waiting,
        }
    )
    boards = _per_board(
        details,
        table,
        snapshot.sink.of(detail_topic),
        _frame(inputs.sink_dead_letters),
        (snapshot.latest[detail_topic], inputs.table_read.detail_end),
    )
    cutoff = liveness.overdue_cutoff_ms(
        now_ms, options.unmatched_timeout_ms, options.stall_after_ms
    )
    found = [
        _emit(
            held,
            _position_checks(
                held,
                snapshot.join.of(board),
                snapshot.earliest[board],
                snapshot.join.under_way_of(board),
                bool(inputs.unseen),
            ),
            SOURCE,
        ),
        _emit(boards, _board_checks(boards)),
        _drilled_rows(
            boards,
            table,
            details,
            snapshot.earliest[detail_topic],
            snapshot.latest[detail_topic],
        ),
        _member_checks(details, members),
        _kind(waiting[_true(waiting["arrived_ms"] < cutoff)], "overdue_pending"),
    ]
    if join_mode == LATEST:
        member_end = snapshot.join.of(settings.member_topic)
        found.append(_stuck(waiting, members, _frame(inputs.refused_members), member_end))
    rows = pd.concat(found, ignore_index=True)
    facts = pa.Table.from_pandas(rows, schema=FACTS, preserve_index=False)
    return with_type_mismatches(facts, inputs.table_read)


def _holdings(holders: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """:func:`.positions.holdings`: every holder's records with the window's columns over
    their source position."""
    tagged = pd.concat(
        [
            pd.DataFrame(
                {
                    "holder": pd.Series(name, index=frame.index, dtype="string"),
                    "board_id": frame["board_id"].astype("string"),
                    **{c: frame[c].astype("Int64") for c in SOURCE},
                    **{
                        c: frame[c] if c in frame else pd.Series(pd.NA, frame.index, "Int64")
                        for c in ("board_digest", "digest")
                    },
                    EXPIRED: _true(frame[EXPIRED])
                    if EXPIRED in frame
                    else pd.Series(False, frame.index),
                }
            )
            for name, frame in holders.items()
        ],
        ignore_index=True,
    )
    holder = tagged["holder"]
    label = "board[" + tagged["source_partition"].astype("string") + "]@"
    label = label + tagged["source_offset"].astype("string")
    key = tagged.groupby(SOURCE, dropna=False, sort=False).ngroup()  # the window
    out = tagged[["holder", *SOURCE, "board_digest"]].copy()
    out["board_id"] = tagged["board_id"].fillna(label)
    for name in HOLDERS:
        out[f"n_{name}"] = (holder == name).astype(int).groupby(key).transform("sum")
    source = holder == "source"
    out["n_expired"] = tagged[EXPIRED].astype(int).groupby(key).transform("sum")
    out["source_board"] = tagged["board_id"].where(source).groupby(key).transform("max")
    out["source_digest"] = tagged["board_digest"].where(source).groupby(key).transform("max")
    out["first"] = ~tagged.duplicated([*SOURCE, "holder"])
    joined = tagged["digest"].where(holder == "joined")
    out["joined_versions"] = joined.groupby(key).transform("nunique")
    return out


def _position_checks(
    held: pd.DataFrame,
    join_end: dict[int, int],
    earliest: dict[int, int],
    under_way_to: dict[int, int] | None,
    unseen: bool,
) -> dict[str, pd.Series]:
    """:func:`.positions.checks` on :func:`_holdings`' rows."""
    holder = held["holder"]
    partition, offset = held["source_partition"], held["source_offset"]
    read = _below(partition, offset, join_end)
    outputs = [held[f"n_{name}"] > 0 for name in ("joined", "unmatched", "dead_lettered")]
    held_by_outputs = sum(o.astype(int) for o in outputs)
    waiting = held["n_pending"] > 0
    count = held_by_outputs + waiting.astype(int)
    if under_way_to is not None:
        count = count.where(~(waiting & (held_by_outputs == 1)), 1)
    source = _bool(holder == "source")
    conflict = _bool((count > 1) | (held["joined_versions"] > 1))
    single = source & read & _bool(count == 1) & ~conflict
    is_output = _bool(holder.isin(["joined", "unmatched", "dead_lettered"]))
    retained = _any(((partition == p) & (offset >= start) for p, start in earliest.items()), held)
    other_board = _bool(holder.isin(["joined", "unmatched"])) & ~_null_safe_equal(
        held["board_id"], held["source_board"]
    )
    unread = ~_below(partition, offset, join_end if under_way_to is None else under_way_to)
    altered = (
        _bool(holder.isin(["joined", "unmatched"]))
        & _bool(held["n_source"] > 0)
        & ~other_board
        & ~_null_safe_equal(held["board_digest"], held["source_digest"])
    )
    first = _bool(held["first"])
    return {
        "source": source,
        "read": source & read,
        "not_yet_read": source & ~read,
        "joined": single & _bool(held["n_joined"] > 0),
        "unmatched": single & _bool(held["n_unmatched"] > 0),
        "dead_lettered": single & _bool(held["n_dead_lettered"] > 0),
        "pending": single & _bool(waiting & (held_by_outputs == 0)),
        "missing": source & read & _bool(count == 0) & (not unseen),
        "expired_unseen": source & read & _bool(count == 0) & unseen,
        "conflicting": source & read & conflict,
        "extra": (is_output | _bool(holder == "pending"))
        & retained
        & ((first & (_bool(held["n_source"] == 0) | (is_output & unread))) | other_board),
        "altered_output": altered,
        "source_expired": is_output & ~retained & first,
        "expired_evidence": single & _bool(held["n_expired"] > 0),
        "topic_replays": is_output & ~first & ~other_board,
    }


def _per_board(
    details: pd.DataFrame,
    table: pd.DataFrame,
    sink_end: dict[int, int],
    sink_dead_letters: pd.DataFrame,
    detail_ends: tuple[dict[int, int], dict[int, int]],
) -> pd.DataFrame:
    """:func:`.table_checks.per_board`: per board its records and rows, its newest record,
    for a board with one row that row's, and whether a row of it was loaded ahead."""
    dead = _keys(sink_dead_letters, DETAIL).assign(sink_dead_lettered=True)
    marked = details[["board_id", *DETAIL, "digest"]].merge(dead, "left", on=DETAIL)
    flagged = marked["sink_dead_lettered"].astype("boolean").fillna(False)  # coalesce
    marked = marked.assign(holder="detail", sink_dead_lettered=flagged, ahead=False)
    snapshot_end, listed_end = detail_ends
    partition, offset = table["detail_partition"], table["detail_offset"]
    ahead = ~_below(partition, offset, snapshot_end) & _below(partition, offset, listed_end)
    rows = table[["board_id", *DETAIL, "digest"]].assign(
        holder="table", sink_dead_lettered=False, ahead=ahead.fillna(False)
    )
    both = pd.concat([marked, rows], ignore_index=True)
    both["board_id"] = both["board_id"].astype("string")
    both["sink_dead_lettered"] = both["sink_dead_lettered"].astype("boolean")
    is_detail = both["holder"] == "detail"
    key = both.groupby("board_id", dropna=False, sort=False).ngroup()
    boards = pd.DataFrame(
        {
            "board_id": both["board_id"].groupby(key).first(),  # NA for the NULL board id
            "n_detail": is_detail.groupby(key).sum(),
            "n_table": (~is_detail).groupby(key).sum(),
            "ahead": both["ahead"].astype(bool).groupby(key).any(),
        }
    )
    # max_by: the newest record is the one at the highest offset (of those that have one).
    records = both[is_detail & both["detail_offset"].notna()].assign(group=key)
    newest = _last_by(records, "group", "detail_offset").set_index("group")
    for c in (*DETAIL, "digest", "sink_dead_lettered"):
        boards[f"newest_{c}"] = newest[c].reindex(boards.index).astype(both[c].dtype)
    for c in (*DETAIL, "digest"):
        minimum = both[c][~is_detail].groupby(key[~is_detail]).min()
        boards[f"row_{c}"] = minimum.reindex(boards.index).astype(both[c].dtype)
    settled = _bool(boards["n_detail"] > 0) & _below(
        boards["newest_detail_partition"], boards["newest_detail_offset"], sink_end
    )
    row_is_newest = _bool(boards["n_table"] == 1)
    for c in (*DETAIL, "digest"):
        row_is_newest = row_is_newest & (boards[f"row_{c}"] == boards[f"newest_{c}"])
    boards["settled"] = settled
    boards["drill"] = (
        _bool(boards["n_table"] > 0) & ~row_is_newest.fillna(False) & ~_bool(boards["ahead"])
    )
    return boards.reset_index(drop=True)


def _board_checks(boards: pd.DataFrame) -> dict[str, pd.Series]:
    """:func:`.table_checks.board_checks`."""
    n_table, n_detail, settled = boards["n_table"], boards["n_detail"], boards["settled"]
    ahead = _bool(boards["ahead"])
    loadable = settled & ~boards["newest_sink_dead_lettered"]
    return {
        "duplicates": _bool(n_table > 1),
        "missing_in_table": loadable & _bool(n_table == 0),
        "expected_table_rows": _bool(n_detail > 0) & (loadable | _bool(n_table > 0)) & ~ahead,
        "sink_dead_lettered": settled & boards["newest_sink_dead_lettered"],
        "not_yet_loaded": _bool(n_detail > 0) & ~settled & ~ahead,
        "loaded_ahead": ahead,
    }


def _drilled_rows(
    boards: pd.DataFrame,
    table: pd.DataFrame,
    details: pd.DataFrame,
    earliest: dict[int, int],
    latest: dict[int, int],
) -> pd.DataFrame:
    """:func:`.table_checks.drilled_rows`: each wrong row of a drilled board."""
    drilled = boards[_true(boards["drill"])][list(DRILLED)]
    records = (
        details[[*DETAIL, "board_id", "digest"]]
        .rename(columns={"board_id": "record_board_id", "digest": "record_digest"})
        .assign(record_found=True)
    )
    rows = table.merge(_keys(drilled, ["board_id"]), on="board_id")
    rows = rows.merge(_keys(records, DETAIL), "left", on=DETAIL)
    partition, offset = rows["detail_partition"], rows["detail_offset"]
    exists = _bool(offset >= 0) & _below(partition, offset, latest)
    expired = _below(partition, offset, earliest)
    same_record = _null_safe_equal(rows["record_board_id"], rows["board_id"]) & _null_safe_equal(
        rows["record_digest"], rows["digest"]
    )
    newest = _bool(partition == rows["newest_detail_partition"]) & _bool(
        offset == rows["newest_detail_offset"]
    )
    stale = _bool(rows["settled"]) & ~_bool(rows["newest_sink_dead_lettered"]) & ~newest
    gone = exists & expired & _bool(rows["record_found"].isna())
    kind = _case(
        rows,
        [
            (~_bool(rows["typed"]), None),  # a type_mismatch already
            (gone & _bool(rows["n_detail"] == 0), "unverifiable_in_table"),
            (gone & stale, "stale_in_table"),
            (gone, None),
            (~exists | _bool(rows["n_detail"] == 0), "extra_in_table"),
            (~same_record, "mismatched"),
            (stale, "stale_in_table"),
        ],
    )
    return _kinds(rows, kind)


def _member_checks(details: pd.DataFrame, versions: pd.DataFrame) -> pd.DataFrame:
    """:func:`.spark_checks._member_checks`: each record against the member version it names."""
    named = details[["board_id", "member_id", *MEMBER, "member_digest"]].merge(
        _keys(versions, MEMBER)[[*MEMBER, "member_digest"]].rename(
            columns={"member_digest": "version_digest"}
        ),
        "left",
        on=MEMBER,
    )
    known = _keys(versions, ["member_id"])[["member_id"]].drop_duplicates().assign(known=True)
    named = named.merge(known, "left", on="member_id")
    version = named["version_digest"]
    kind = _case(
        named,
        [
            (
                _bool(version.notna()) & ~_null_safe_equal(named["member_digest"], version),
                "altered_output",
            ),
            (_bool(version.isna() & named["known"].isna()), "referential"),
        ],
    )
    return _kinds(named, kind)


def _stuck(
    waiting: pd.DataFrame,
    versions: pd.DataFrame,
    refused: pd.DataFrame,
    member_end: dict[int, int],
) -> pd.DataFrame:
    """:func:`.spark_checks._stuck`: boards waiting for a member the join has read and holds alive,
    or for no member id at all."""
    read = versions[
        _true(_below(versions["member_partition"], versions["member_offset"], member_end))
    ]
    gone = _keys(refused, MEMBER)[MEMBER].drop_duplicates().assign(refused=True)
    read = read.merge(gone, "left", on=MEMBER)
    read = read[read["refused"].isna()]
    # max_by: a member's newest version is at its highest offset (of those that have one).
    dated = read[read["member_offset"].notna()]
    newest = _last_by(dated, "member_id", "member_offset")
    alive = newest["member_id"][~_true(newest["tombstone"])].dropna()
    member = waiting["member_id"]
    stuck = waiting[(member.isna() | member.isin(alive)).fillna(False).astype(bool)]
    return _kind(stuck, "stuck_pending")


def _last_by(frame: pd.DataFrame, group: str, order: str) -> pd.DataFrame:
    """Per ``group`` (NULL one group), the row of the highest ``order``; of equals the last:
    Spark's ``max_by``, which takes the later of equal orderings."""
    return frame.sort_values(order, kind="stable").drop_duplicates(group, keep="last")


def _frame(table: pa.Table) -> pd.DataFrame:
    """``table`` with nullable pandas dtypes: NULL stays NA, and logic on it is three-valued."""
    return table.to_pandas(types_mapper=_NULLABLE.get)


def _keys(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The right side of a join on ``columns``: pandas would match NA with NA, SQL does not."""
    return frame[frame[columns].notna().all(axis=1)]


def _bool(values: pd.Series | bool) -> pd.Series:
    return pd.Series(values).astype("boolean")


def _true(condition: pd.Series) -> pd.Series:
    """Where ``condition`` holds (NULL does not)."""
    return pd.Series(condition).astype("boolean").fillna(False).astype(bool)


def _any(conditions: Iterable[pd.Series], frame: pd.DataFrame) -> pd.Series:
    """:func:`boardstream.spark.columns.any_of`: false OR each condition, three-valued."""
    result = pd.Series(False, index=frame.index, dtype="boolean")
    for condition in conditions:
        result = result | _bool(condition)
    return result


def _below(partition: pd.Series, offset: pd.Series, ends: dict[int, int]) -> pd.Series:
    """:func:`boardstream.spark.columns.below`."""
    return _any(
        ((partition == p) & (offset < end) for p, end in ends.items()), partition.to_frame()
    )


def _null_safe_equal(a: pd.Series, b: pd.Series) -> pd.Series:
    """SQL's ``<=>``: NULL equals NULL, never NULL itself."""
    both_null = a.isna() & b.isna()
    return _bool((a == b).astype("boolean").fillna(False) | both_null)


def _case(frame: pd.DataFrame, branches: list[tuple[pd.Series, str | None]]) -> pd.Series:
    """``CASE WHEN``: the value of the first branch whose condition holds (NULL does not)."""
    kind = pd.Series(pd.NA, index=frame.index, dtype="string")
    decided = pd.Series(False, index=frame.index)
    for condition, value in branches:
        hit = _true(condition) & ~decided
        if value is not None:
            kind[hit] = value
        decided |= hit
    return kind


def _emit(
    frame: pd.DataFrame, checks: dict[str, pd.Series], position: list[str] | None = None
) -> pd.DataFrame:
    """:func:`.spark_checks._emit`: a fact per row and check that holds on it."""
    return pd.concat(
        [_facts(frame[_true(holds)], kind, position) for kind, holds in checks.items()],
        ignore_index=True,
    )


def _kinds(frame: pd.DataFrame, kind: pd.Series) -> pd.DataFrame:
    """A board fact per row whose ``kind`` is not NULL."""
    found = kind.notna()
    return pd.DataFrame(
        {
            "kind": kind[found],
            "partition": pd.Series(pd.NA, index=frame.index[found], dtype="Int32"),
            "offset": pd.Series(pd.NA, index=frame.index[found], dtype="Int64"),
            "board_id": frame["board_id"][found].astype("string"),
        }
    )


def _kind(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    return _facts(frame, kind, None)


def _facts(rows: pd.DataFrame, kind: str, position: list[str] | None) -> pd.DataFrame:
    def column(name: str | None, dtype: str) -> pd.Series:
        if name is None:
            return pd.Series(pd.NA, index=rows.index, dtype=dtype)
        return rows[name].astype(dtype)

    return pd.DataFrame(
        {
            "kind": pd.Series(kind, index=rows.index, dtype="string"),
            "partition": column(position[0] if position else None, "Int32"),
            "offset": column(position[1] if position else None, "Int64"),
            "board_id": rows["board_id"].astype("string"),
        }
    )
