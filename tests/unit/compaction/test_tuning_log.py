"""The compaction tuning log on SQLite: one change id per apply or rollback (consecutive), the
replay before on every row of a change and the replay after once verified, the unverified
changes (rollbacks never count), and the newest changes grouped per change for the UI."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from boardstream import database
from boardstream.compaction import tuning_log
from boardstream.compaction.tuning_log import LoggedSetting


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = database.engine(f"sqlite:///{tmp_path / 'log.db'}")
    tuning_log.create(engine)
    return engine


def row(setting: str, old: str | None, new: str, **extra: object) -> dict[str, object]:
    return {
        "topic": "member",
        "setting": setting,
        "old_value": old,
        "old_is_default": old is None,
        "new_value": new,
        "reason": f"why {setting}",
        "run_by": "cli:test",
        **extra,
    }


def test_each_change_gets_the_next_id_and_the_replay_before(engine: Engine) -> None:
    first = tuning_log.record(
        engine,
        [row("segment.ms", None, "3600000"), row("segment.bytes", "1048576", "2097152")],
        (1_000, 400, 0.6),
    )
    second = tuning_log.record(engine, [row("segment.ms", "3600000", "7200000")], None)
    assert (first, second) == (1, 2)
    logged = tuning_log.change(engine, 1)
    assert [
        (s.change_id, s.setting, s.old_value, s.old_is_default, s.new_value, s.reason)
        for s in logged
    ] == [
        (1, "segment.ms", None, True, "3600000", "why segment.ms"),
        (1, "segment.bytes", "1048576", False, "2097152", "why segment.bytes"),
    ]
    assert all(type(s) is LoggedSetting for s in logged)
    assert [(s.records_before, s.waste_before, s.records_after, s.rolls_back) for s in logged] == [
        (1_000, 0.6, None, None)
    ] * 2
    assert logged[0].applied_at == logged[1].applied_at  # one change, one moment
    (rollback,) = tuning_log.change(engine, 2)
    assert (rollback.records_before, rollback.waste_before, rollback.run_by) == (
        None,
        None,
        "cli:test",
    )
    assert tuning_log.change(engine, 3) == []


def test_verification_fills_the_after_columns_of_that_change_only(engine: Engine) -> None:
    tuning_log.record(engine, [row("a", None, "1"), row("b", None, "2")], (10, 5, 0.5))
    tuning_log.record(engine, [row("a", "1", "3")], (10, 5, 0.5))
    tuning_log.record_verification(engine, 1, (8, 5, 0.375))
    assert [(s.records_after, s.waste_after) for s in tuning_log.change(engine, 1)] == [
        (8, 0.375),
        (8, 0.375),
    ]
    assert [(s.records_after, s.waste_after) for s in tuning_log.change(engine, 2)] == [
        (None, None)
    ]
    with engine.connect() as connection:
        after = connection.execute(
            sa.select(
                tuning_log.compaction_tuning_log.c.live_keys_after,
                tuning_log.compaction_tuning_log.c.verified_at,
            ).where(tuning_log.compaction_tuning_log.c.change_id == 1)
        ).all()
    assert [keys for keys, _ in after] == [5, 5]
    assert all(verified is not None for _, verified in after)


def test_unverified_lists_applied_changes_not_yet_measured(engine: Engine) -> None:
    tuning_log.record(engine, [row("a", None, "1"), row("b", None, "2")], (10, 5, 0.5))  # 1
    tuning_log.record(engine, [row("a", None, "1")], (10, 5, 0.5))  # 2
    tuning_log.record(engine, [row("a", "1", "0", rolls_back=2)], None)  # 3: a rollback
    tuning_log.record(engine, [row("a", None, "4")], (10, 5, 0.5))  # 4
    tuning_log.record_verification(engine, 2, (5, 5, 0.0))
    assert tuning_log.unverified(engine) == [1, 4]


def test_unverified_on_a_new_database_creates_the_table(tmp_path: Path) -> None:
    engine = database.engine(f"sqlite:///{tmp_path / 'new.db'}")
    assert tuning_log.unverified(engine) == []
    assert sa.inspect(engine).has_table("compaction_tuning_log")


def test_recent_changes_newest_first_with_their_settings(engine: Engine) -> None:
    tuning_log.record(engine, [row("a", None, "1")], (10, 5, 0.5))
    tuning_log.record(engine, [row("a", None, "2"), row("b", "7", "8")], (10, 6, 0.4))
    tuning_log.record(engine, [row("a", "2", "1", rolls_back=2)], None)
    tuning_log.record_verification(engine, 2, (6, 6, 0.0))
    recent = tuning_log.recent_changes(engine, limit=2)
    assert [
        {k: v for k, v in c.items() if k not in ("applied_at", "verified_at")} for c in recent
    ] == [
        {
            "change_id": 3,
            "run_by": "cli:test",
            "rolls_back": 2,
            "waste_before": None,
            "waste_after": None,
            "settings": [{"topic": "member", "setting": "a", "old": "2", "new": "1"}],
        },
        {
            "change_id": 2,
            "run_by": "cli:test",
            "rolls_back": None,
            "waste_before": 0.4,
            "waste_after": 0.0,
            "settings": [
                {"topic": "member", "setting": "a", "old": "(default)", "new": "2"},
                {"topic": "member", "setting": "b", "old": "7", "new": "8"},
            ],
        },
    ]
    assert recent[0]["verified_at"] is None and recent[1]["verified_at"] is not None
    assert [c["change_id"] for c in tuning_log.recent_changes(engine)] == [3, 2, 1]
