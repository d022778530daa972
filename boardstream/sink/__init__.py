"""Loading a pipeline's joined topic into its sink table, idempotently (the shipped
pipeline's: its joined topic into its table, both named in its declaration).

The front door is :func:`start`, imported lazily like the join's, and :func:`leased`: the
sink's writes are fenced by its checkpoint's lease, so a query started outside it writes
nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from boardstream.settings import Settings
    from boardstream.sink.job import SinkJobConfig, SinkTarget


def start(
    spark: SparkSession,
    settings: Settings,
    config: SinkJobConfig,
    target: SinkTarget | None = None,
) -> StreamingQuery:
    """Start the sink query of ``target`` (the shipped pipeline's if None), its dead letters
    checked to fit, its checkpoint guarded."""
    from boardstream.sink.job import start_sink

    return start_sink(spark, settings, config, target)


@contextmanager
def leased(settings: Settings, config: SinkJobConfig) -> Iterator[None]:
    """Hold the sink's checkpoint lease while the block runs its query, as its job does: a
    query started in process (a test, a benchmark) without it has every write refused."""
    from boardstream.spark import checkpoint_lease

    with checkpoint_lease.hold(settings, config.checkpoint_dir(settings), config.query_name, {}):
        yield
