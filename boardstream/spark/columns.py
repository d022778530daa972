"""Column conditions over Kafka positions, shared by every check that asks where a record is."""

from __future__ import annotations

from collections.abc import Iterable
from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F


def any_of(conditions: Iterable[Column]) -> Column:
    """The disjunction of ``conditions`` (false when there are none)."""
    return reduce(lambda a, b: a | b, conditions, F.lit(False))


def below(partition: Column, offset: Column, ends: dict[int, int]) -> Column:
    """The position (``partition``, ``offset``) lies below ``ends`` of its partition (false in
    a partition ``ends`` does not name)."""
    return any_of((partition == p) & (offset < end) for p, end in ends.items())
