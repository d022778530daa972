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
