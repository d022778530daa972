"""The checks' SQL: written once in Spark's dialect, run by Spark on a large full run's frames
and by DuckDB on a small one's and on an incremental run's Arrow tables.

Spark runs the text as it is. For DuckDB (:func:`in_duckdb`), sqlglot translates it; the one
difference sqlglot does not carry is ``max_by``'s NULL values: Spark returns the value at the
greatest ordering even when it is NULL, DuckDB's ``arg_max`` skips NULL values,
``arg_max_null`` does not. Spark's join hints have no DuckDB form and are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp


def any_of(conditions: Iterable[str]) -> str:
    """The disjunction of ``conditions`` (false when there are none; NULL as SQL's OR has it)."""
    return "(" + " OR ".join(["FALSE", *(f"({c})" for c in conditions)]) + ")"


def below(partition: str, offset: str, ends: dict[int, int]) -> str:
    """The position (``partition``, ``offset``) lies below ``ends`` of its partition (false in
    a partition ``ends`` does not name)."""
    return any_of(
        f"{partition} = {int(p)} AND {offset} < {int(end)}" for p, end in sorted(ends.items())
    )


# A position packed into one bigint (:func:`position_order`): 2**15 partitions of 2**48 offsets
# (281 trillion records) each, every one read with NULL as -1.
_PARTITIONS, _OFFSETS = 2**15, 2**48


def position_order(partition: str, offset: str) -> str:
    """The position (``partition``, ``offset``) as one bigint ordered like the pair, a NULL read
    as -1 (the sink's order, :data:`boardstream.sink.table.NEWEST_ORDER`): an ordering of
    fixed width, which keeps Spark's aggregates in its hash map (a struct does not). NULL for a
    position past the packing's range, which no topic reaches (such a position is never a
    board's newest)."""
    p, o = f"coalesce({partition}, -1)", f"coalesce({offset}, -1)"
    return (
        f"CASE WHEN {p} BETWEEN -1 AND {_PARTITIONS - 2} AND {o} BETWEEN -1 AND {_OFFSETS - 2} "
        f"THEN ({p} + 1) * {_OFFSETS} + ({o} + 1) END"
    )


def same_position(left: str, right: str, kind: str) -> str:
    """A join condition: the ``<kind>_partition``, ``<kind>_offset`` of ``left`` and ``right``
    are equal (a NULL matches nothing)."""
    return " AND ".join(f"{left}.{kind}_{c} = {right}.{kind}_{c}" for c in ("partition", "offset"))


def flag(value: bool) -> str:
    return "TRUE" if value else "FALSE"


def explode_kinds(checks: dict[str, str]) -> str:
    """One row per check of ``checks`` (kind: condition) that holds on a row, as ``kind``: a
    single pass over the row for them all. A NULL condition holds nothing."""
    whens = ", ".join(f"CASE WHEN {holds} THEN '{kind}' END" for kind, holds in checks.items())
    return f"explode(array_compact(array({whens})))"


def for_duckdb(query: str) -> str:
    """``query`` (Spark SQL) as DuckDB runs it."""
    tree = sqlglot.parse_one(query, read="spark")
    for hint in list(tree.find_all(exp.Hint)):
        hint.pop()
    tree = tree.transform(
        lambda node: (
            exp.Anonymous(this="ARG_MAX_NULL", expressions=[node.this, node.expression])
            if isinstance(node, exp.ArgMax)
            else node
        )
    )
    return tree.sql(dialect="duckdb")


def in_duckdb(
    query: str, tables: Mapping[str, pa.Table], memory_mb: int, spill_dir: Path
) -> pa.Table:
    """``query`` (Spark SQL) run by DuckDB in process, over ``tables`` as its views, within
    ``memory_mb`` (DuckDB's own default is 80 % of the machine's memory), spilling past it to
    ``spill_dir``."""
    spill_dir.mkdir(parents=True, exist_ok=True)
    config = {"memory_limit": f"{int(memory_mb)}MB", "temp_directory": str(spill_dir)}
    with duckdb.connect(config=config) as connection:
        for view, table in tables.items():
            connection.register(view, table)
        return connection.sql(for_duckdb(query)).to_arrow_table()
