"""Every flag of a Spark job reaches the job's config under its own field (flag dests are the
config's field names; a renamed flag that fell back to a default would show here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from boardstream.aggregations.event_time import SessionSpec, WindowSpec
from boardstream.aggregations.event_time_job import EventTimeConfig
from boardstream.aggregations.source import SourceOptions
from boardstream.aggregations.table_count import TableCountConfig
from boardstream.entrypoints import jobs
from boardstream.joins.job import JoinJobConfig
from boardstream.joins.member_table import JoinOptions
from boardstream.sink.job import SinkJobConfig
from boardstream.spark import streaming

QUERY = ["--trigger", "processing-time", "--interval", "5 seconds", "--checkpoint", "/tmp/cp"]


@pytest.fixture
def started(monkeypatch) -> list[object]:
    """The config each main hands its domain's start (no Spark: the seam is the start call)."""
    configs: list[object] = []

    def capture(_spark, _settings, config):
        configs.append(config)

    monkeypatch.setattr(streaming, "run_job", lambda _name, start: start(None, None) or 0)
    monkeypatch.setattr(jobs.joins, "start", capture)
    monkeypatch.setattr(jobs.sink, "start", capture)
    monkeypatch.setattr(jobs, "start_table_count", capture)
    monkeypatch.setattr(jobs, "start_event_time_count", capture)
    return configs


def test_join_flags(started) -> None:
    argv = [
        *QUERY,
        "--join-mode=as-of",
        "--unmatched-timeout=2m",
        "--history-retention=3d",
        "--deleted-retention=1h",
        "--max-pending-per-member=7",
        "--max-record-bytes=1000",
        "--max-offsets-per-trigger=500",
        "--state-buckets=16",
    ]
    assert jobs.join_main(argv) == 0
    assert started == [
        JoinJobConfig(
            options=JoinOptions(
                mode="as-of",
                unmatched_timeout_ms=120_000,
                max_pending_per_member=7,
                history_retention_ms=3 * 86_400_000,
                deleted_retention_ms=3_600_000,
            ),
            trigger="processing-time",
            interval="5 seconds",
            max_record_bytes=1000,
            max_offsets_per_trigger=500,
            checkpoint=Path("/tmp/cp"),
            state_buckets=16,
        )
    ]


def test_join_defaults(started) -> None:
    assert jobs.join_main([]) == 0
    assert started == [JoinJobConfig()]


def test_sink_flags(started) -> None:
    assert jobs.sink_main([*QUERY, "--max-offsets-per-trigger=9"]) == 0
    assert started == [
        SinkJobConfig(
            trigger="processing-time",
            interval="5 seconds",
            max_offsets_per_trigger=9,
            checkpoint=Path("/tmp/cp"),
        )
    ]


def test_table_count_flags(started) -> None:
    argv = [
        *QUERY,
        "--source-topic=board",
        "--output-topic=counts",
        "--value-field=member_id",
        "--time-field=ts",
        "--dlq-topic=bad",
        "--order=event-time",
        "--state-ttl=1d",
        "--max-offsets-per-trigger=3",
    ]
    assert jobs.table_count_main(argv) == 0
    source = SourceOptions("board", "member_id", "ts", max_offsets_per_trigger=3)
    assert started == [
        TableCountConfig(
            source,
            "counts",
            "event-time",
            "bad",
            86_400_000,
            trigger="processing-time",
            interval="5 seconds",
            checkpoint=Path("/tmp/cp"),
        )
    ]


def test_window_and_session_flags(started) -> None:
    topics = ["--source-topic=board", "--output-topic=out"]
    assert jobs.window_main([*topics, "--size=1m", "--grace=10s", "--emit=updates"]) == 0
    assert jobs.session_main([*topics, "--gap=30m", "--group-by=key", "--retention=2d"]) == 0
    source = SourceOptions("board")
    assert started == [
        EventTimeConfig(
            "window-count", source, "out", WindowSpec(60_000, 10_000, 86_400_000, "updates")
        ),
        EventTimeConfig(
            "session-count", source, "out", SessionSpec(1_800_000, 0, 172_800_000), group_by="key"
        ),
    ]
