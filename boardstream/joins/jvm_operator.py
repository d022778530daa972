"""The join's stateful operator on the JVM (``jvm/``, ``io.boardstream.join.MemberJoin``),
applied from PySpark through the JVM gateway.

Keyed by member id, two RocksDB state values per member (``member``: its versions and
deletion; ``waiting``: the boards waiting for it, which reconciliation reads alone): a
micro-batch reads and writes only the members its records name, with no Python worker and no
round trip per state call, so a batch costs what its own records cost (the Python operator,
:mod:`boardstream.joins.processor`, moves a whole bucket of members through the Python state
server per call: docs/BENCHMARKS.md). The semantics are
:class:`~boardstream.joins.member_table.MemberTable`'s; a property test feeds both the same
inputs and requires the same outputs.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from boardstream.joins import schema
from boardstream.joins.member_table import AS_OF, JoinOptions

OPERATOR = "io.boardstream.join.MemberJoin"
# The keys dead letters and ticks travel under (MemberJoin.DEAD_LETTER_KEY, TICK_KEY).
DEAD_LETTER_KEY = -(2**63)
TICK_KEY = DEAD_LETTER_KEY + 1
_DEAD = (("dead_key", "string"), ("dead_letter", "string"))
OUTPUT_DDL = schema.ddl(schema.OUTPUT + _DEAD)


def _struct(columns: tuple[tuple[str, str], ...]) -> str:
    return "struct<" + ", ".join(f"`{name}`: {kind}" for name, kind in columns) + ">"


# A member's entry: its versions and when it was deleted (state variable ``member``), the boards
# waiting for it (``waiting``).
MEMBER_STATE_DDL = f"versions array<{_struct(schema.MEMBER)}>, deleted_at_ms bigint"
WAITING_STATE_DDL = f"boards array<{_struct(schema.PENDING)}>"
# The state variables, as a checkpoint's identity records them: one written before the waiting
# boards had a variable of their own (``member`` held them) records none, and is refused.
STATE_VARIABLES = ("member", "waiting")


def join_key() -> Column:
    """The member id, or the key of the dead letters or of the ticks."""
    return (
        F.when(F.col("dead_letter").isNotNull(), F.lit(DEAD_LETTER_KEY))
        .when(F.col("kind") == "tick", F.lit(TICK_KEY))
        .otherwise(F.col("member_id"))
        .cast("bigint")
    )


def member_join(routed: DataFrame, options: JoinOptions, update: bool = False) -> DataFrame:
    """The operator's rows (:data:`OUTPUT_DDL`) for ``routed`` (see
    :func:`~boardstream.joins.parse.routed`); ``update`` when the query runs in update mode
    (the real-time trigger)."""
    spark = routed.sparkSession
    operator = spark._jvm
    for part in OPERATOR.split("."):
        operator = getattr(operator, part)
    joined = operator.apply(
        routed.withColumn("join_key", join_key())._jdf,
        OUTPUT_DDL,
        MEMBER_STATE_DDL,
        WAITING_STATE_DDL,
        options.mode == AS_OF,
        options.unmatched_timeout_ms,
        options.max_pending_per_member,
        options.history_retention_ms,
        options.deleted_retention_ms,
        update,
    )
    return DataFrame(joined, spark)
