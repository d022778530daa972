"""A declared stream ⋈ table join (board ⋈ member shipped): parsing, the stateful processor,
and the job.

The front door is :func:`start` (the job's command line, the DAGs' tests and the benches call
it); imported lazily, so the pure modules (schema, member_table) stay free of Spark's imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from boardstream.joins.job import JoinJobConfig
    from boardstream.joins.topics import Deployed
    from boardstream.settings import Settings


def start(
    spark: SparkSession,
    settings: Settings,
    config: JoinJobConfig,
    deployed: Deployed | None = None,
) -> StreamingQuery:
    """Start the join query of ``deployed`` (the shipped pipeline on the settings' topics if None),
    checked, guarded and ticked; the caller awaits or stops it."""
    from boardstream.joins.job import start_join

    return start_join(spark, settings, config, deployed)
