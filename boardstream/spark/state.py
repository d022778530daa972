"""``boardstream state show``: what a streaming job holds in its state store, read from its
checkpoint with Spark's state data sources (``state-metadata`` for the operators and their state
variables, ``statestore`` for the rows): the interactive-query need, without stopping the job.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from boardstream.errors import BoardstreamError
from boardstream.locations import checkpoint_uri, child, shown
from boardstream.spark.checkpoint_files import CheckpointFiles

TIMER_PREFIX = "$"  # Spark's internal timer variables, e.g. $procTimers_keyToTimestamp


def require_checkpoint(files: CheckpointFiles, location: str | Path) -> str:
    """``location`` (a path or URI) as a URI, refused unless a streaming query wrote there."""
    checkpoint = checkpoint_uri(location)
    if not files.exists(child(checkpoint, "offsets")):
        raise BoardstreamError(f"{shown(checkpoint)} is not a streaming checkpoint (no offsets/)")
    return checkpoint


def state_report(
    spark: SparkSession,
    checkpoint: str,
    key: str | None = None,
    variable: str | None = None,
    limit: int = 20,
) -> Iterator[str]:
    """Lines describing every stateful operator of the query of ``checkpoint`` (a URI) and, per
    state variable, its rows per partition and its rows (those whose key is ``key``, if
    given)."""
    operators = spark.read.format("state-metadata").load(checkpoint).collect()
    if not operators:
        raise BoardstreamError(f"{shown(checkpoint)}: the query keeps no state")
    known = {
        v["stateName"]
        for o in operators
        for v in json.loads(o.operatorProperties or "{}").get("stateVariables", [])
    }
    if variable is not None and variable not in known:
        raise BoardstreamError(
            f"no state variable {variable!r} in {shown(checkpoint)}; it has: "
            f"{', '.join(sorted(known))}"
        )
    for operator in operators:
        properties = json.loads(operator.operatorProperties or "{}")
        yield (
            f"operator {operator.operatorId} {operator.operatorName} "
            f"({operator.numPartitions} partitions, batches {operator.minBatchId}.."
            f"{operator.maxBatchId}, {properties.get('timeMode', 'no')} time)"
        )
        names = [v["stateName"] for v in properties.get("stateVariables", [])] or [None]
        for name in names:
            if variable is not None and name != variable:
                continue
            if variable is None and name and name.startswith(TIMER_PREFIX):
                continue
            yield from _variable(spark, checkpoint, operator.operatorId, name, key, limit)


def _variable(
    spark: SparkSession,
    checkpoint: str,
    operator_id: int,
    name: str | None,
    key: str | None,
    limit: int,
) -> Iterator[str]:
    reader = spark.read.format("statestore").option("operatorId", str(operator_id))
    if name is not None:
        reader = reader.option("stateVarName", name)
    rows = reader.load(checkpoint).cache()
    counts = sorted(rows.groupBy("partition_id").count().collect())
    per_partition = ", ".join(f"{r.partition_id}: {r['count']:,}" for r in counts)
    total = sum(r["count"] for r in counts)
    yield f"  state {name or 'default'}: {total:,} rows (per partition {per_partition or '-'})"
    if key is not None:
        rows = rows.where(_key_text(rows) == key)
    for row in rows.limit(limit).collect():
        yield f"    key {_jsonable(row.key)} → {json.dumps(_jsonable(row.value))}"
    rows.unpersist()


def _key_text(rows: DataFrame) -> Any:
    """The key as text: its only field, or the whole struct as JSON when it has several."""
    fields = rows.schema["key"].dataType.fieldNames()
    if len(fields) == 1:
        return F.col("key").getField(fields[0]).cast("string")
    return F.to_json("key")


def _jsonable(value: Any) -> Any:
    """A state row's value as JSON can hold it: a decimal as its digits (``100.50``, not a
    rounded double), a date or time in ISO 8601, as the declared fields write them."""
    if isinstance(value, Decimal):
        return f"{value:f}"
    if isinstance(value, date):  # datetime included
        return value.isoformat()
    if hasattr(value, "asDict"):
        value = value.asDict(recursive=True)
        if len(value) == 1:
            return _jsonable(next(iter(value.values())))
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value
