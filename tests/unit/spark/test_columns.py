"""Position conditions evaluated by Spark itself: a position is below its partition's end,
never in a partition the ends do not name, and no condition at all is false (the checks that
ask where a record is rely on all three). Marked integration: a Column needs a live session."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from boardstream.spark.columns import any_of, below

pytestmark = pytest.mark.integration

POSITIONS = [(0, 0), (0, 4), (0, 5), (1, 0), (1, 9), (2, 0)]


def _matching(spark, condition) -> list[tuple[int, int]]:
    frame = spark.createDataFrame(POSITIONS, "partition int, offset long")
    rows = frame.where(condition(F.col("partition"), F.col("offset"))).collect()
    return sorted((row.partition, row.offset) for row in rows)


def test_below_is_strictly_under_the_end_of_the_named_partitions_only(spark) -> None:
    assert _matching(spark, lambda p, o: below(p, o, {0: 5, 1: 1})) == [(0, 0), (0, 4), (1, 0)]


def test_no_ends_and_no_conditions_match_nothing(spark) -> None:
    assert _matching(spark, lambda p, o: below(p, o, {})) == []
    assert _matching(spark, lambda p, o: any_of([])) == []
    assert _matching(spark, lambda p, o: any_of([p == 2, o == 9])) == [(1, 9), (2, 0)]
