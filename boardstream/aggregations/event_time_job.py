"""The session-count and window-count jobs: :mod:`event_time`'s windows and sessions on the
RocksDB state store through ``transformWithStateInPandas``, results to a compacted topic keyed
by ``group@start``, too-late events to the DLQ (with where they came from) and counted in state.

Stream time is kept per source partition and for the job (see ``event_time.Clock``): all groups
share one state value (column-wise arrays, as the join keeps its buckets), so every
batch is one state read and write.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.stateful_processor import (
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

from boardstream.aggregations import source
from boardstream.aggregations.event_time import (
    Clock,
    Late,
    Sessions,
    SessionSpec,
    Windows,
    WindowSpec,
)
from boardstream.aggregations.output import (
    DLQ,
    OUTPUT,
    processed_rows,
    split_batch,
    start_output,
)
from boardstream.settings import Settings
from boardstream.spark import streaming

Aggregation = Windows | Sessions
GROUP_BY = ("value", "key")


@dataclass(frozen=True)
class EventTimeConfig(streaming.QueryConfig):
    job: str  # "session-count" or "window-count"
    source: source.SourceOptions
    output_topic: str
    spec: WindowSpec | SessionSpec
    group_by: str = "value"
    dlq_topic: str | None = None

    @property
    def query_name(self) -> str:
        return f"{self.job}-{self.output_topic}"

    def aggregation(self) -> Aggregation:
        if isinstance(self.spec, WindowSpec):
            return Windows(self.spec)
        return Sessions(self.spec)


class EventTimeCount(StatefulProcessor):
    def __init__(self, make: Callable[[], Aggregation], source_topic: str) -> None:
        self.make = make
        self.source_topic = source_topic
        self.kind = "window" if isinstance(make(), Windows) else "session"

    def init(self, handle: StatefulProcessorHandle) -> None:
        columns = self.make().COLUMNS
        ddl = ", ".join(f"`{name}` array<{kind}>" for name, kind in columns)
        self.store = handle.getValueState("aggregates", ddl)
        self.clock = handle.getValueState(
            "clock",
            "partition array<int>, partition_ms array<bigint>, stream_ms bigint, late bigint",
        )

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        valid, dead_letters = split_batch(rows)
        yield from dead_letters
        aggregation = self.make()
        stored = self.store.get()
        if stored is not None:
            aggregation.load(list(zip(*stored, strict=True)))
        clock = self.clock.get()
        if clock is not None:
            aggregation.clock = Clock.from_row(clock)
        columns = ("attribute", "event_ms", "partition", "offset")
        results, late = aggregation.apply(
            list(zip(*(valid[name].tolist() for name in columns), strict=True))
        )
        table = aggregation.rows()
        if table:
            self.store.update(tuple(list(column) for column in zip(*table, strict=True)))
        else:
            self.store.clear()
        self.clock.update(aggregation.clock.row())
        out = [
            (OUTPUT, f"{r.group}@{r.start_ms}", json.dumps(r.to_json(self.kind))) for r in results
        ]
        out += [(DLQ, _base64(x.group), json.dumps(self._late(x))) for x in late]
        if out:
            yield pd.DataFrame(out, columns=["route", "key", "value"])

    def _late(self, late: Late) -> dict[str, Any]:
        return {
            "error": f"too late: event time {late.event_ms} ms, its {self.kind} had closed at "
            f"stream time {late.stream_ms} ms",
            "source_topic": self.source_topic,
            "partition": late.partition,
            "offset": late.offset,
            "group": late.group,
            "event_ms": late.event_ms,
        }


def _base64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def event_time_output(
    spark: SparkSession, settings: Settings, config: EventTimeConfig
) -> DataFrame:
    options = config.source
    if config.group_by == "value":
        options = replace(options, tombstones=False)
    parsed = source.read_source(spark, settings, options)
    if config.group_by == "key":
        parsed = parsed.withColumn("attribute", F.col("entity"))
    processor = EventTimeCount(config.aggregation, config.source.topic)
    return processed_rows(parsed, processor, "None", config, "clock")  # one stream time


def start_event_time_count(
    spark: SparkSession, settings: Settings, config: EventTimeConfig
) -> StreamingQuery:
    spec = {"kind": type(config.spec).__name__, **asdict(config.spec)}
    identity = {"group_by": config.group_by, "spec": spec}
    return start_output(spark, settings, config, event_time_output, identity)
