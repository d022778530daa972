"""The join's stateful operator on the JVM (``jvm/``, ``io.boardstream.join.StreamTableJoin``),
applied from PySpark through the JVM gateway, for any declared pipeline.

Keyed by the table's key, two RocksDB state values per key (the row's versions and deletion;
the stream records waiting for it, which reconciliation reads alone): a micro-batch reads and
writes only the keys its records name, with no Python worker and no round trip per state call,
so a batch costs what its own records cost (the Python operator,
:mod:`boardstream.joins.processor`, moves a whole bucket through the Python state server per
call: docs/BENCHMARKS.md). The layouts are the declaration's (:mod:`boardstream.joins.layout`);
the semantics are :class:`~boardstream.joins.member_table.MemberTable`'s, and a property test
feeds both the same inputs and requires the same outputs.
"""

from __future__ import annotations

import re
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from boardstream.joins import schema
from boardstream.joins.layout import JoinLayout, struct
from boardstream.joins.member_table import AS_OF, DELETED, MISSING, OVERFLOW, JoinOptions

# The keys dead letters and ticks travel under, per key type: an int64's two smallest values,
# or texts with U+0000, which no valid text field holds.
SPECIAL_KEYS = {
    "bigint": (-(2**63), -(2**63) + 1),
    "string": (f"{schema.FORBIDDEN_CHAR}dead_letter", f"{schema.FORBIDDEN_CHAR}tick"),
}
# The state variables: the row's (its first name, which checkpoints hold) and the waiting
# records'. A checkpoint written before the waiting records had a variable of their own
# records none, and is refused.
STATE_VARIABLES = ("member", "waiting")


def output_ddl(layout: JoinLayout) -> str:
    return schema.ddl(layout.output)


def row_state_ddl(layout: JoinLayout) -> str:
    return f"versions array<{struct(layout.version)}>, deleted_at_ms bigint"


def waiting_state_ddl(layout: JoinLayout, stream_label: str) -> str:
    """One array, named after the stream's records (``boards``): the state store encodes it
    as an Avro field, whose name takes letters, digits and ``_`` only (a topic ``cli-orders``
    failed every batch: "Illegal character in: cli-orders"), so any other is an ``_``."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", schema.plural(stream_label))
    return f"`{'_' + name if name[0].isdigit() else name}` array<{struct(layout.waiting)}>"


def java_layout(jvm: Any, layout: JoinLayout) -> Any:
    """The layout as ``io.boardstream.join.Layout`` reads it."""
    return jvm.io.boardstream.join.Layout(
        list(layout.plan),
        len(layout.stream.columns),
        len(layout.table.columns),
        layout.event_index,
        MISSING,
        DELETED,
        OVERFLOW,
    )


def java_options(jvm: Any, options: JoinOptions) -> Any:
    """The options as ``io.boardstream.join.JoinOptions`` (a record) takes them, in order."""
    return jvm.io.boardstream.join.JoinOptions(
        options.mode == AS_OF,
        options.unmatched_timeout_ms,
        options.max_pending_per_member,
        options.history_retention_ms,
        options.deleted_retention_ms,
    )


def join_key(layout: JoinLayout) -> Column:
    """The table key a routed row is grouped by: its own, or the dead letters' or the ticks'."""
    dead, tick = SPECIAL_KEYS[layout.key_type]
    return (
        F.when(F.col("dead_letter").isNotNull(), F.lit(dead))
        .when(F.col("kind") == "tick", F.lit(tick))
        .otherwise(F.col("join_key"))
        .cast(layout.key_type)
    )


def stateful_join(
    routed: DataFrame,
    layout: JoinLayout,
    stream_label: str,
    options: JoinOptions,
    update: bool = False,
) -> DataFrame:
    """The operator's rows (:func:`output_ddl`) for ``routed`` (the layout's routed columns,
    see :func:`~boardstream.joins.parse.routed_declared`); ``update`` when the query runs in
    update mode (the real-time trigger)."""
    spark = routed.sparkSession
    jvm = spark._jvm
    joined = jvm.io.boardstream.join.StreamTableJoin.apply(
        routed.withColumn("join_key", join_key(layout))._jdf,
        output_ddl(layout),
        row_state_ddl(layout),
        waiting_state_ddl(layout, stream_label),
        java_layout(jvm, layout),
        list(STATE_VARIABLES),
        java_options(jvm, options),
        update,
    )
    return DataFrame(joined, spark)


def rejoin(routed: DataFrame, layout: JoinLayout, options: JoinOptions, now_ms: int) -> DataFrame:
    """Repair's join of ``routed`` (a batch: the stream records to join again and their table
    rows' records) with the operator's own per-key logic (``JoinTables.rejoin``): one batch at
    ``now_ms``, then one at ``now_ms`` plus the unmatched timeout, so a record whose row never
    came is unmatched. Rows in :func:`output_ddl`, the dead letters' included."""
    spark = routed.sparkSession
    jvm = spark._jvm
    joined = jvm.io.boardstream.join.JoinTables.rejoin(
        routed.withColumn("join_key", join_key(layout))._jdf,
        output_ddl(layout),
        java_layout(jvm, layout),
        java_options(jvm, options),
        now_ms,
    )
    return DataFrame(joined, spark)
