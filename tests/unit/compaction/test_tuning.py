"""One tuning pass, as the CLI and the DAG run it, with the broker replaced at its seams
(``compacted_topics``, ``measure_topic``, ``apply``): which topics a selection touches and the
error when none, reconciled topics keep versions for reconciliation, a dry run applies nothing,
and the report's exact lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from boardstream.compaction import tuning
from boardstream.compaction.apply import PlannedSetting
from boardstream.compaction.measure import PartitionMeasurement, TopicMeasurement
from boardstream.compaction.policy import Targets
from boardstream.compaction.tuning import (
    Selection,
    TopicTuning,
    default_reconciled,
    measurement_line,
    report,
    select,
    tune,
)
from boardstream.errors import BoardstreamError
from boardstream.settings import Settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(var_dir=tmp_path)


def measurement(topic: str) -> TopicMeasurement:
    partitions = [
        PartitionMeasurement(0, 1_500, 1_000, 20, 150_000, 1_000, 11_000),
        PartitionMeasurement(1, 500, 200, 5, 50_000, 2_000, 6_000),
    ]
    return TopicMeasurement(topic, partitions, {"cleanup.policy": ("compact", False)}, 2.25)


def test_is_reconciled_matches_any_pattern() -> None:
    chosen = Selection(reconciled=("member", "t?-board"))
    assert chosen.is_reconciled("member") is True
    assert chosen.is_reconciled("t1-board") is True
    assert chosen.is_reconciled("t1-board-detail") is False
    assert Selection().is_reconciled("member") is False


def test_reconciliation_reads_the_member_and_board_topics(settings: Settings) -> None:
    assert default_reconciled(settings.with_topic_prefix("x")) == ("x-member", "x-board")


@pytest.fixture
def topics(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """compacted_topics' calls; it finds whatever is in ``found`` (the list's first item)."""
    calls: list[Any] = [["member", "t1-board"]]

    def compacted(_admin, _settings, include, exclude):
        calls.append((include, exclude))
        return list(calls[0])

    monkeypatch.setattr(tuning, "compacted_topics", compacted)
    return calls


def test_select_passes_the_patterns(topics, settings) -> None:
    chosen = Selection(("m*", "t1-*"), ("*-dlq",), ("member",))
    assert select("admin", settings, chosen) == ["member", "t1-board"]
    assert topics[1:] == [(["m*", "t1-*"], ["*-dlq"])]


@pytest.mark.parametrize(
    ("chosen", "message"),
    [
        (Selection(), "no compacted topic matches any pattern"),
        (Selection(("a*", "b")), "no compacted topic matches a*, b"),
        (Selection(("a*",), ("ab", "ac")), "no compacted topic matches a* (excluding ab, ac)"),
        (Selection((), ("ab",)), "no compacted topic matches any pattern (excluding ab)"),
    ],
)
def test_selecting_nothing_is_an_error(topics, settings, chosen, message) -> None:
    topics[0] = []
    with pytest.raises(BoardstreamError) as refused:
        select("admin", settings, chosen)
    assert str(refused.value) == message


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch, topics) -> list[Any]:
    applied: list[Any] = []
    monkeypatch.setattr(
        tuning, "measure_topic", lambda _admin, _settings, topic, _progress: measurement(topic)
    )

    def apply(_admin, _settings, engine, m, planned, run_by):
        applied.append((engine, m.topic, run_by, planned))
        return 40 + len(applied)

    monkeypatch.setattr(tuning, "apply", apply)
    return applied


def lag(t: TopicTuning) -> str:
    (setting,) = [p for p in t.planned if p.setting == "min.compaction.lag.ms"]
    return setting.new_value


def test_a_dry_run_plans_every_topic_and_applies_nothing(measured, settings) -> None:
    chosen = Selection(reconciled=("member",))
    tunings = tune("admin", settings, None, chosen, Targets(), False, "cli:me")
    assert [(t.measurement.topic, t.change_id) for t in tunings] == [
        ("member", None),
        ("t1-board", None),
    ]
    assert measured == []
    # The reconciled topic keeps every version for a reconciliation interval.
    assert [lag(t) for t in tunings] == ["900000", "0"]
    assert [p.setting for p in tunings[0].planned] == [
        "segment.bytes",
        "segment.ms",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "max.compaction.lag.ms",
        "delete.retention.ms",
    ]
    assert tunings[0].planned[0].old_value is None  # as measured: not described


def test_a_dry_run_with_a_database_still_applies_nothing(measured, settings) -> None:
    tunings = tune("admin", settings, "engine", Selection(), Targets(), False, "cli:me")
    assert [t.change_id for t in tunings] == [None, None]
    assert measured == []


def test_execute_applies_each_topics_plan_and_keeps_its_change_id(measured, settings) -> None:
    tunings = tune("admin", settings, "engine", Selection(), Targets(), True, "cli:me")
    assert [t.change_id for t in tunings] == [41, 42]
    assert [(engine, topic, run_by) for engine, topic, run_by, _ in measured] == [
        ("engine", "member", "cli:me"),
        ("engine", "t1-board", "cli:me"),
    ]
    assert measured[0][3] == tunings[0].planned


def test_execute_needs_the_database(measured, settings) -> None:
    with pytest.raises(
        BoardstreamError, match=r"^applying changes needs the database for compaction_tuning_log$"
    ):
        tune("admin", settings, None, Selection(), Targets(), True, "cli:me")


def test_measurement_line() -> None:
    assert measurement_line(measurement("member")) == (
        "member: 2,000 records replayed, 1,200 live keys, 25 tombstones, waste 40.0% (2.2s)"
    )


def test_report_says_what_happened_to_each_topic() -> None:
    planned = [PlannedSetting("member", "segment.ms", "1", True, "2", "why")]
    applied = TopicTuning(measurement("member"), planned, 7)
    unchanged = TopicTuning(measurement("board"), [], None)
    header = "records replayed, 1,200 live keys, 25 tombstones, waste 40.0% (2.2s)"
    assert report([applied, unchanged], execute=True) == [
        f"member: 2,000 {header}",
        "  member segment.ms: 1 (default) -> 2: why",
        "  applied as change 7",
        f"board: 2,000 {header}",
        "  nothing to change",
    ]
    assert report([unchanged], execute=False) == [
        f"board: 2,000 {header}",
        "  dry run: nothing applied",
    ]
