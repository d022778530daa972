"""The checks of :mod:`.facts` over Arrow tables, for an incremental run's few records.

An incremental run (#22) checks a few thousand records. In Spark most of its time went to fixed
costs that do not depend on them: a py4j call and an analysis per step of the plans, the
optimizer and planner, a job per stage. Here DuckDB runs the same query, the one the full run's
Spark runs (translated by :mod:`.sql`), in process, in milliseconds. ``tests/integration/
test_arrow_checks.py`` holds the two engines to the same facts on random inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from boardstream.joins.topics import JoinTopics
from boardstream.reconcile.checks import facts, sql
from boardstream.reconcile.checks.spark_checks import (
    ReconcileOptions,
    bounds,
    with_type_mismatches,
)
from boardstream.reconcile.reads.readers import TableRead
from boardstream.reconcile.reads.snapshot import Snapshot
from boardstream.reconcile.reads.waiting import waiting_lines
from boardstream.settings import Settings


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
    topics: JoinTopics,
    snapshot: Snapshot,
    join_mode: str | None,
    now_ms: int,
    options: ReconcileOptions,
) -> pa.Table:
    """:func:`.spark_checks.evaluate` of ``inputs``: every check that holds, one row each
    (FACT_COLUMNS), and the table's type mismatches among them."""
    query = facts.query(
        bounds(inputs.table_read, bool(inputs.unseen), topics, snapshot, join_mode, now_ms, options)
    )
    tables = {view: getattr(inputs, field_name) for field_name, view in facts.VIEWS.items()}
    return with_type_mismatches(
        sql.in_duckdb(
            query, tables, settings.reconcile_in_process_memory_mb, settings.reconcile_spill
        ),
        inputs.table_read,
    )
