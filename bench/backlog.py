"""What the production-scale benchmarks share: a seeded backlog in fresh, prefixed topics."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable

from boardstream import joins, sink
from boardstream.generator.manifest import Manifest
from boardstream.generator.plan import PRODUCTION_BOARDS, PRODUCTION_MEMBERS, GeneratorOptions
from boardstream.generator.producer import produce
from boardstream.joins.job import JoinJobConfig
from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import create_topics, platform_topics
from boardstream.settings import Settings
from boardstream.sink.job import SinkJobConfig


def produce_backlog(name: str, scale: float, **options: int) -> tuple[Settings, Manifest]:
    """442,128 members and 447,017 boards times ``scale`` (seed 1, further generator ``options``
    such as orphans) in topics ``<name>-<time>-*``, with their own var dir under var/bench."""
    settings = backlog_settings(name, time.strftime("%Y%m%d%H%M%S"))
    create_topics(admin_client(settings), settings, platform_topics(settings))
    options = GeneratorOptions(
        members=round(PRODUCTION_MEMBERS * scale),
        boards=round(PRODUCTION_BOARDS * scale),
        seed=1,
        **options,
    )
    return settings, produce(settings, options, settings.var_dir / "manifest.json", 5.0)


def backlog_settings(name: str, run: str) -> Settings:
    """The settings of backlog ``run`` (its topics ``<name>-<run>-*`` and var dir)."""
    base = Settings()
    return base.with_topic_prefix(
        f"{name}-{run}", var_dir=base.var_dir / "bench" / run, jar_cache=base.jars_dir
    )


def drop_topics(settings: Settings) -> None:
    """Delete every topic of the backlog's run: its own five, and each system's outputs and a
    peer's internal topics, all named after the run. A production-scale run leaves gigabytes."""
    run = settings.member_topic.removesuffix("-member")
    admin = admin_client(settings)
    topics = sorted(t for t in admin.list_topics(timeout=30).topics if f"{run}-" in t)
    if topics:
        for future in admin.delete_topics(topics).values():
            future.result()
    print(f"deleted the {len(topics)} topics of {run}")


def drop_backlog(settings: Settings) -> None:
    """The backlog's topics and its var dir."""
    drop_topics(settings)
    shutil.rmtree(settings.var_dir, ignore_errors=True)


def drop_state(settings: Settings, systems: Iterable[str]) -> None:
    """The backlog's topics and what each of ``systems`` kept in its var dir (its state dir and
    checkpoint), and the manifest; the logs stay, for reading a run afterwards."""
    drop_topics(settings)
    for name in systems:
        for state in (name, f"{name}-ckpt"):
            shutil.rmtree(settings.var_dir / state, ignore_errors=True)
    (settings.var_dir / "manifest.json").unlink(missing_ok=True)


def drain(spark, settings: Settings) -> None:
    """The join, then the sink (under its lease, which fences its writes), each until it has
    read everything (available-now)."""
    query = joins.start(spark, settings, JoinJobConfig())
    query.awaitTermination()
    assert query.exception() is None, query.exception()
    with sink.leased(settings, SinkJobConfig()):
        query = sink.start(spark, settings, SinkJobConfig())
        query.awaitTermination()
    assert query.exception() is None, query.exception()
