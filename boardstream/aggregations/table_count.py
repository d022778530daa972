"""The table-count job: per attribute value, how many entities hold it now.

The input is a table topic (key = entity, value = what it currently holds, null = deleted).
A new value for an entity retracts its old one, as Kafka Streams' ``groupBy(...).count()`` on a
KTable does. State, on the RocksDB store: ``entities`` (entity → its holding) and ``counts``
(value → how many hold it), two map states of one group, since every value's count depends on
every entity; the changed counts of each micro-batch go to a compacted topic keyed by value.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.stateful_processor import (
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

from boardstream.aggregations import source
from boardstream.aggregations.holdings import ARRIVAL, Holding, retarget
from boardstream.aggregations.output import (
    processed_rows,
    split_batch,
    start_output,
)
from boardstream.settings import Settings
from boardstream.spark import streaming

JOB = "table-count"


@dataclass(frozen=True)
class TableCountConfig(streaming.QueryConfig):
    source: source.SourceOptions
    output_topic: str
    order: str = ARRIVAL
    dlq_topic: str | None = None
    state_ttl_ms: int | None = None

    @property
    def query_name(self) -> str:
        return f"{JOB}-{self.output_topic}"


class TableCount(StatefulProcessor):
    def __init__(self, order: str, state_ttl_ms: int | None) -> None:
        self.order = order
        self.state_ttl_ms = state_ttl_ms

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.entities = handle.getMapState(
            "entities",
            "entity string",
            "value string, event_ms bigint, offset bigint",
            self.state_ttl_ms,
        )
        self.counts = handle.getMapState("counts", "value string", "count bigint")

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        valid, dead_letters = split_batch(rows)
        yield from dead_letters
        changes: Counter[str] = Counter()
        holdings: dict[str, Holding | None] = {}
        for entity, value, event_ms, offset in zip(
            valid["entity"].tolist(),
            valid["attribute"].tolist(),
            valid["event_ms"].tolist(),
            valid["offset"].tolist(),
            strict=True,
        ):
            if entity not in holdings:
                stored = self.entities.getValue((entity,))
                holdings[entity] = Holding(*stored) if stored is not None else None
            candidate = Holding(None if pd.isna(value) else value, int(event_ms), int(offset))
            holdings[entity] = retarget(holdings[entity], candidate, self.order, changes)
        for entity, holding in holdings.items():
            self._store(entity, holding)
        out = []
        for value, change in sorted(changes.items()):
            if change == 0:
                continue
            stored = self.counts.getValue((value,))
            count = (stored[0] if stored is not None else 0) + change
            if count:
                self.counts.updateValue((value,), (count,))
            else:
                self.counts.removeKey((value,))
            out.append(("output", value, json.dumps({"value": value, "count": count})))
        if out:
            yield pd.DataFrame(out, columns=["route", "key", "value"])

    def _store(self, entity: str, holding: Holding | None) -> None:
        if holding is None:
            return
        if holding.value is None and self.order == ARRIVAL:
            self.entities.removeKey((entity,))  # nothing older can arrive later
        else:
            self.entities.updateValue((entity,), (holding.value, holding.event_ms, holding.offset))


def table_count_output(
    spark: SparkSession, settings: Settings, config: TableCountConfig
) -> DataFrame:
    parsed = source.read_source(spark, settings, config.source)
    time_mode = "ProcessingTime" if config.state_ttl_ms else "None"
    processor = TableCount(config.order, config.state_ttl_ms)
    return processed_rows(parsed, processor, time_mode, config, "group")


def start_table_count(
    spark: SparkSession, settings: Settings, config: TableCountConfig
) -> StreamingQuery:
    return start_output(spark, settings, config, table_count_output, {"order": config.order})
