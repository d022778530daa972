"""The tuning policy: every setting recommended, reasoned, and inside its guardrails."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from boardstream.compaction.policy import (
    MIB,
    MS_PER_DAY,
    MS_PER_MINUTE,
    SETTINGS,
    Guardrails,
    Targets,
    TopicShape,
    recommend,
)
from boardstream.errors import InvalidOptionError

# 10 versions per key, 100,000 keys, 3 partitions, 200 B records, 100 updates/s.
UPDATE_HEAVY = TopicShape("member", 3, 1_000_000, 100_000, 5_000, 200_000_000, 100.0)


def values(shape: TopicShape, targets: Targets) -> dict[str, float]:
    return {r.setting: float(r.value) for r in recommend(shape, targets)}


def test_every_setting_once_with_a_reason() -> None:
    recommendations = recommend(UPDATE_HEAVY, Targets())
    assert [r.setting for r in recommendations] == list(SETTINGS)
    assert all(r.reason for r in recommendations)


def test_update_heavy_topic_gets_the_modelled_values() -> None:
    # 1,000,000 keys, 10 versions each, 2 kB records, 3 partitions, 100 updates/s.
    shape = TopicShape("member", 3, 10_000_000, 1_000_000, 0, 20_000_000_000, 100.0)
    got = values(shape, Targets(max_replay_waste=0.1))
    extra = 1_000_000 * 0.1 / 0.9  # 111,111 extra records allowed
    per_partition = extra / 2 / 3  # half of them in active segments
    assert got["segment.bytes"] == round(per_partition * 2_000)  # 37 MB
    assert got["segment.ms"] == round(per_partition * 3 / 100 * 1000)  # 9 min 16 s
    assert got["min.cleanable.dirty.ratio"] == round((extra / 2) / (1_000_000 + extra / 2), 3)
    assert got["min.compaction.lag.ms"] == 0
    assert got["max.compaction.lag.ms"] == 2 * got["segment.ms"]
    assert got["delete.retention.ms"] == MS_PER_DAY


def test_floors_decide_and_say_so() -> None:
    recommendations = {r.setting: r for r in recommend(UPDATE_HEAVY, Targets())}
    assert recommendations["segment.bytes"].value == str(MIB)
    assert "raised to the floor 1 MiB" in recommendations["segment.bytes"].reason
    assert recommendations["segment.ms"].value == str(MS_PER_MINUTE)
    assert "floor 1 min" in recommendations["segment.ms"].reason


def test_a_quiet_topic_rolls_segments_by_time_within_the_ceiling() -> None:
    quiet = TopicShape("member", 1, 1_000_000, 900_000, 0, 10**9, 0.001)
    got = values(quiet, Targets())
    assert got["segment.ms"] == 7 * MS_PER_DAY
    assert got["max.compaction.lag.ms"] == 14 * MS_PER_DAY


def test_reconciled_topic_keeps_versions_for_the_reconciliation_interval() -> None:
    targets = Targets(reconciled=True, reconciliation_interval_ms=20 * MS_PER_MINUTE)
    got = values(UPDATE_HEAVY, targets)
    assert got["min.compaction.lag.ms"] == 20 * MS_PER_MINUTE
    assert got["max.compaction.lag.ms"] == 20 * MS_PER_MINUTE + 2 * got["segment.ms"]


def test_delete_retention_never_below_the_downtime_even_past_the_ceiling() -> None:
    got = values(UPDATE_HEAVY, Targets(max_consumer_downtime_ms=120 * MS_PER_DAY))
    assert got["delete.retention.ms"] == 120 * MS_PER_DAY
    short = values(UPDATE_HEAVY, Targets(max_consumer_downtime_ms=1_000))
    assert short["delete.retention.ms"] == Guardrails().limits["delete.retention.ms"][0]


def test_restore_budget_binds_before_the_waste_target() -> None:
    targets = Targets(restore_rate=1_000, restore_budget_s=105)  # 105,000 records: 5,000 extra
    recommendations = {r.setting: r for r in recommend(UPDATE_HEAVY, targets)}
    assert "restore budget" in recommendations["segment.bytes"].reason
    assert float(recommendations["min.cleanable.dirty.ratio"].value) == round(2_500 / 102_500, 3)


def test_measured_rate_is_the_fallback_and_the_expected_one_wins() -> None:
    measured = values(UPDATE_HEAVY, Targets(max_replay_waste=0.5))
    expected = values(UPDATE_HEAVY, Targets(max_replay_waste=0.5, update_rate=10.0))
    assert expected["segment.ms"] == pytest.approx(measured["segment.ms"] * 10, abs=1)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_replay_waste": 0}, "max replay waste"),
        ({"max_replay_waste": 1.5}, "max replay waste"),
        ({"restore_rate": -5}, "restore rate"),
        ({"restore_budget_s": 0}, "restore budget"),
        ({"update_rate": -1}, "update rate"),
        ({"max_consumer_downtime_ms": -1}, "max consumer downtime"),
    ],
)
def test_invalid_targets_are_refused_on_construction(fields: dict, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=f"invalid target: {message}"):
        Targets(**fields)


shapes = st.builds(
    TopicShape,
    topic=st.just("t"),
    partitions=st.integers(1, 64),
    records=st.integers(0, 10**9),
    live_keys=st.integers(0, 10**8),
    tombstones=st.integers(0, 10**6),
    bytes=st.integers(0, 10**12),
    observed_rate=st.one_of(st.none(), st.floats(1e-6, 1e7)),
)
targets = st.builds(
    Targets,
    max_replay_waste=st.floats(0.001, 0.999),
    update_rate=st.one_of(st.none(), st.floats(1e-6, 1e7)),
    restore_rate=st.floats(1, 1e7),
    restore_budget_s=st.floats(0.1, 1e5),
    max_consumer_downtime_ms=st.integers(0, 365 * MS_PER_DAY),
    reconciliation_interval_ms=st.integers(0, 10 * MS_PER_DAY),
    reconciled=st.booleans(),
)


@given(shapes, targets)
def test_every_value_inside_its_guardrails(shape: TopicShape, target: Targets) -> None:
    limits = Guardrails().limits
    got = values(shape, target)
    for setting, value in got.items():
        low, high = limits[setting]
        if setting == "delete.retention.ms":
            assert value >= max(low, target.max_consumer_downtime_ms)
            assert value <= max(high, target.max_consumer_downtime_ms)
        else:
            assert low <= value <= high, setting
    assert got["max.compaction.lag.ms"] >= min(
        got["min.compaction.lag.ms"], limits["max.compaction.lag.ms"][1]
    )
