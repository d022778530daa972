"""The checks' SQL helpers, evaluated by both engines that run the checks: a position is below
its partition's end, never in a partition the ends do not name, and no condition at all is
false; ``max_by`` keeps a NULL value at the greatest ordering in DuckDB as in Spark (sqlglot's
plain ``arg_max`` would skip it). Marked integration: Spark needs a live session."""

from __future__ import annotations

import duckdb
import pytest

from boardstream.reconcile.checks import sql

pytestmark = pytest.mark.integration

POSITIONS = "VALUES (0, 0), (0, 4), (0, 5), (1, 0), (1, 9), (2, 0) AS positions(p, o)"


def _spark(spark, query: str) -> list[tuple]:
    return sorted(tuple(row) for row in spark.sql(query).collect())


def _duckdb(query: str) -> list[tuple]:
    with duckdb.connect() as connection:
        return sorted(connection.sql(sql.for_duckdb(query)).fetchall())


def _matching(condition: str) -> str:
    return f"SELECT p, o FROM {POSITIONS} WHERE {condition}"


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        (sql.below("p", "o", {0: 5, 1: 1}), [(0, 0), (0, 4), (1, 0)]),
        (sql.below("p", "o", {}), []),
        (sql.any_of([]), []),
        (sql.any_of(["p = 2", "o = 9"]), [(1, 9), (2, 0)]),
    ],
)
def test_positions_match_alike_in_both_engines(spark, condition: str, expected) -> None:
    assert _spark(spark, _matching(condition)) == expected
    assert _duckdb(_matching(condition)) == expected


def test_max_by_keeps_a_null_value_in_both_engines(spark) -> None:
    query = """
        SELECT g, max_by(v, struct(o, p)) AS newest
        FROM VALUES (1, 'old', 1, 0), (1, NULL, 2, 0), (2, 'a', 1, 0), (2, 'b', 1, 1),
            (3, 'x', NULL, 0) AS t(g, v, o, p)
        GROUP BY g
    """
    expected = [(1, None), (2, "b"), (3, "x")]
    assert _spark(spark, query) == expected
    assert _duckdb(query) == expected
    # The broken variant: sqlglot's own translation skips the NULL value.
    with duckdb.connect() as connection:
        plain = sorted(
            connection.sql(sql.sqlglot.transpile(query, "spark", "duckdb")[0]).fetchall()
        )
    assert plain[0] == (1, "old")
