"""The retention rule (boardstream/kafka/retention.py) without a broker: what an output topic must
keep against ``board`` (retention.ms at least board's, -1 forever; no size limit; no compaction),
what ``topics create`` gives the streams, and when reconciliation is overdue against the outputs'
retention. tests/integration/test_topics_cli.py runs the same rule on a real broker."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from boardstream.kafka.retention import (
    ExpiryRisk,
    Retention,
    StreamRetention,
    reconciliation_overdue,
    risks_of,
    stream_retention,
)
from boardstream.settings import Settings

HOUR_MS = 3_600_000
WEEK_MS = 7 * 24 * HOUR_MS
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def delete(ms: int | None = WEEK_MS, size: int | None = None) -> Retention:
    return Retention("delete", ms, size)


def test_effective_configs_read_as_limits() -> None:
    configs = {"cleanup.policy": "delete", "retention.ms": "3600000", "retention.bytes": "-1"}
    assert Retention.of(configs) == Retention("delete", HOUR_MS, None)
    forever = {**configs, "retention.ms": "-1", "retention.bytes": "1024"}
    assert Retention.of(forever) == Retention("delete", None, 1024)
    # A compact-only topic deletes by neither limit; compact,delete by both.
    assert Retention.of({**configs, "cleanup.policy": "compact"}) == Retention(
        "compact", None, None
    )
    both = Retention.of({**configs, "cleanup.policy": "compact,delete"})
    assert both == Retention("compact,delete", HOUR_MS, None)


@pytest.mark.parametrize(
    ("output", "source", "reasons"),
    [
        (delete(), delete(), []),  # equal: an output record is written after its source
        (delete(WEEK_MS + 1), delete(), []),
        (delete(None), delete(), []),
        (delete(None), delete(None), []),
        (
            delete(),
            delete(None, size=10),  # board deletes by size alone: it may keep a record longer
            ["retention.ms=604800000 (168h00m) is shorter than its -1 (forever)"],
        ),
        (
            delete(WEEK_MS - 1),
            delete(),
            ["retention.ms=604799999 (167h59m59s) is shorter than its 604800000 (168h00m)"],
        ),
        (
            delete(WEEK_MS),
            delete(None),
            ["retention.ms=604800000 (168h00m) is shorter than its -1 (forever)"],
        ),
        (
            delete(None, size=1 << 30),
            delete(None, size=1 << 30),  # the same size limit cuts the larger outputs sooner
            ["retention.bytes=1073741824 deletes by size, not age (set -1: no size limit)"],
        ),
        (
            Retention("compact", None, None),
            delete(),
            [
                "cleanup.policy=compact compacts away a board's older records, whose sources it "
                "still holds"
            ],
        ),
    ],
)
def test_the_rule(output: Retention, source: Retention, reasons: list[str]) -> None:
    assert risks_of(output, source) == reasons


def test_risks_name_the_output_and_the_source_and_need_a_source() -> None:
    outputs = {"board-detail": delete(HOUR_MS), "board-dlq": delete(size=100)}
    kept = StreamRetention("board", delete(), outputs)
    assert [str(risk) for risk in kept.risks] == [
        "board-detail may expire before board: retention.ms=3600000 (1h00m) is shorter than its "
        "604800000 (168h00m)",
        "board-dlq may expire before board: retention.bytes=100 deletes by size, not age "
        "(set -1: no size limit)",
    ]
    assert StreamRetention("board", None, outputs).risks == []  # nothing to outlive yet
    risk = ExpiryRisk("board-detail", "board", "r")
    assert risk.involves(["board-detail"]) and risk.involves(["board"])
    assert not risk.involves(["board-dlq", "member"])


def test_the_shortest_output_retention() -> None:
    outputs = {"a": delete(WEEK_MS), "b": delete(HOUR_MS, size=5), "c": delete(None)}
    assert StreamRetention("board", delete(), outputs).shortest_ms == HOUR_MS
    assert StreamRetention("board", delete(), {"c": delete(None)}).shortest_ms is None
    assert StreamRetention("board", None, {}).shortest_ms is None


@pytest.mark.parametrize(
    ("setting", "source", "expected_ms"),
    [
        (WEEK_MS, None, WEEK_MS),  # no board yet: the setting's
        (WEEK_MS, delete(30 * 24 * HOUR_MS), 30 * 24 * HOUR_MS),  # an existing board keeps longer
        (WEEK_MS, delete(HOUR_MS), WEEK_MS),  # never less than the setting
        (WEEK_MS, delete(None), -1),  # board keeps forever: so do the outputs
        (-1, delete(HOUR_MS), -1),
        (-1, None, -1),
        (WEEK_MS, Retention("compact", None, None), -1),  # a compacted board never ages out
    ],
)
def test_streams_are_given_at_least_the_source_retention(
    setting: int, source: Retention | None, expected_ms: int
) -> None:
    settings = Settings(_env_file=None, topic_retention_ms=setting)
    assert stream_retention(settings, source) == {
        "retention.ms": str(expected_ms),
        "retention.bytes": "-1",
    }


def test_a_retention_of_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="0 would delete records at once"):
        Settings(_env_file=None, topic_retention_ms=0)
    with pytest.raises(ValueError, match="greater than or equal to -1"):
        Settings(_env_file=None, topic_retention_ms=-2)


def test_reconciliation_is_overdue_once_the_outputs_retention_passed_without_a_verdict() -> None:
    day = timedelta(days=1)
    assert reconciliation_overdue(NOW - day, NOW, WEEK_MS) is None
    just_within = NOW - timedelta(milliseconds=WEEK_MS - 1)
    assert reconciliation_overdue(just_within, NOW, WEEK_MS) is None
    assert reconciliation_overdue(NOW - 7 * day, NOW, WEEK_MS) == (
        "no reconciliation has reached a verdict for 168h00m, longer than the outputs' retention "
        "(168h00m): output records written since 2026-11-23 12:00:00 may age out before a run "
        "sees them"
    )
    assert reconciliation_overdue(NOW - 9 * day, NOW, WEEK_MS).startswith(
        "no reconciliation has reached a verdict for 216h00m,"
    )
    assert reconciliation_overdue(NOW - 400 * day, NOW, None) is None  # outputs keep forever
    assert reconciliation_overdue(None, NOW, HOUR_MS) is None  # no run yet: the first one tells
