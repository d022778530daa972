"""The Spark side of the join: :class:`~boardstream.joins.member_table.MemberTable` on the
RocksDB state store through ``transformWithStateInPandas``.

Grouping by member_id would call Python once per member per micro-batch, each call paying a
round trip to the JVM's state server for the key and for every state access: measured at about
0.7 ms per key (Row API) and 2 ms (pandas API), which is minutes for a 442,128-member backlog.
So the stream is grouped by a bucket of member_id (``hash % buckets``) and each bucket's member
table is one state value: two state calls per bucket per batch, whatever the number of members.
The bucket count is part of the state layout: a checkpoint must keep the count it started with.

With a few hundred rows per call the pandas API beats the Row API, which converts every cell
through a pyarrow scalar (measured: 105 µs per input row, against a 23% faster batch with pandas'
columnar conversion).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

from boardstream.joins import schema
from boardstream.joins.member_table import JoinOptions, MemberTable

# An array, not a map: state schemas are stored as Avro, whose maps only take string keys.
BUCKET_STATE_DDL = (
    "entries array<struct<member_id: bigint, "
    f"versions: array<struct<{schema.struct_fields(schema.MEMBER)}>>, "
    "deleted_at_ms: bigint, "
    f"pending: array<struct<{schema.struct_fields(schema.PENDING)}>>>>"
)
# Invalid records arrive in a bucket of their own and leave unchanged, as dead letters.
DEAD_LETTER_BUCKET = -1
_DEAD = (("dead_key", "string"), ("dead_letter", "string"))
OUTPUT_DDL = schema.ddl(schema.OUTPUT + _DEAD)
OUTPUT_COLUMNS = schema.names(schema.OUTPUT + _DEAD)
INPUT_COLUMNS = schema.names(schema.INPUT)
_NO_DEAD_LETTER = (None, None)


def _tuples(frame: pd.DataFrame) -> Iterator[tuple]:
    """Rows as tuples of plain Python values, column by column (``tolist`` turns numpy scalars
    into ints and strs at C speed; the JVM side sends no nulls in integer columns)."""
    return zip(*(frame[name].tolist() for name in INPUT_COLUMNS), strict=True)


def _frame(out: list[tuple]) -> Iterator[pd.DataFrame]:
    if out:
        yield pd.DataFrame([(*row, *_NO_DEAD_LETTER) for row in out], columns=OUTPUT_COLUMNS)


class BucketedMemberJoin(StatefulProcessor):
    """Grouped by bucket; timeMode ProcessingTime (for the unmatched timer)."""

    def __init__(self, options: JoinOptions) -> None:
        options.validate()
        self.options = options

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = handle.getValueState("members", BUCKET_STATE_DDL)

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        frames = list(rows)
        if key[0] == DEAD_LETTER_BUCKET:
            blank = (None,) * (len(schema.OUTPUT) - 1)
            for frame in frames:
                letters = zip(
                    frame["dead_key"].tolist(), frame["dead_letter"].tolist(), strict=True
                )
                rows = [("dead_letter", *blank, key, letter) for key, letter in letters]
                yield pd.DataFrame(rows, columns=OUTPUT_COLUMNS)
            return
        now = timerValues.getCurrentProcessingTimeInMs()
        table = MemberTable(self.options, self._load())
        out, waiting = table.apply((row for frame in frames for row in _tuples(frame)), now)
        self._save(table)
        if waiting:
            self.handle.registerTimer(now + self.options.unmatched_timeout_ms)
        yield from _frame(out)

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[pd.DataFrame]:
        table = MemberTable(self.options, self._load())
        out = table.expire(expiredTimerInfo.getExpiryTimeInMs())
        if out:
            self._save(table)
        yield from _frame(out)

    def _load(self) -> dict[int, list[Any]]:
        stored = self.state.get()
        if stored is None:
            return {}
        return {
            member_id: [list(versions), deleted_at, list(pending)]
            for member_id, versions, deleted_at, pending in stored[0]
        }

    def _save(self, table: MemberTable) -> None:
        if table.entries:
            self.state.update(([(m, *entry) for m, entry in table.entries.items()],))
        else:
            self.state.clear()

    def close(self) -> None:
        pass
