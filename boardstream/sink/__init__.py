"""Loading ``board-detail`` into the relational table ``board_detail``, idempotently.

The front door is :func:`start`, imported lazily like the join's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from boardstream.settings import Settings
    from boardstream.sink.job import SinkJobConfig


def start(spark: SparkSession, settings: Settings, config: SinkJobConfig) -> StreamingQuery:
    """Start the sink query (its dead letters checked to fit, its checkpoint guarded)."""
    from boardstream.sink.job import start_sink

    return start_sink(spark, settings, config)
