"""The ``compaction_tuning_log`` table: every applied setting, its old value and why.

One row per setting changed; the rows of one apply (or one rollback) share a ``change_id``.
The replay measured before the change, and after it once verified, sits on the same rows, so
the log alone shows whether a change paid off.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine

metadata = sa.MetaData()

compaction_tuning_log = sa.Table(
    "compaction_tuning_log",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("change_id", sa.Integer, nullable=False, index=True),
    sa.Column("topic", sa.String(249), nullable=False),
    sa.Column("setting", sa.String(100), nullable=False),
    sa.Column("old_value", sa.Text),
    sa.Column("old_is_default", sa.Boolean, nullable=False),
    sa.Column("new_value", sa.Text, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("run_by", sa.Text, nullable=False),
    sa.Column("rolls_back", sa.Integer),  # the change this one undid, if a rollback
    sa.Column("records_before", sa.BigInteger),
    sa.Column("live_keys_before", sa.BigInteger),
    sa.Column("waste_before", sa.Float),
    sa.Column("records_after", sa.BigInteger),
    sa.Column("live_keys_after", sa.BigInteger),
    sa.Column("waste_after", sa.Float),
    sa.Column("verified_at", sa.DateTime(timezone=True)),
)


@dataclass(frozen=True)
class SettingChange:
    """One setting of one topic, from its old value to a new one, and why."""

    topic: str
    setting: str
    old_value: str | None
    old_is_default: bool
    new_value: str
    reason: str


@dataclass(frozen=True)
class LoggedSetting(SettingChange):
    change_id: int
    applied_at: datetime
    run_by: str
    rolls_back: int | None
    records_before: int | None
    waste_before: float | None
    records_after: int | None
    waste_after: float | None


def create(engine: Engine) -> None:
    metadata.create_all(engine)


def next_change_id(connection: sa.Connection) -> int:
    current = connection.execute(sa.select(sa.func.max(compaction_tuning_log.c.change_id)))
    return (current.scalar() or 0) + 1


def record(
    engine: Engine, rows: list[dict[str, object]], replay: tuple[int, int, float] | None
) -> int:
    """Write the rows of one change (keys: topic, setting, old_value, old_is_default,
    new_value, reason, run_by, rolls_back); returns its change id."""
    records, live_keys, waste = replay or (None, None, None)
    with engine.begin() as connection:
        change_id = next_change_id(connection)
        now = datetime.now(UTC)
        connection.execute(
            compaction_tuning_log.insert(),
            [
                {
                    "change_id": change_id,
                    "applied_at": now,
                    "rolls_back": None,
                    "records_before": records,
                    "live_keys_before": live_keys,
                    "waste_before": waste,
                    **row,
                }
                for row in rows
            ],
        )
    return change_id


def record_verification(engine: Engine, change_id: int, replay: tuple[int, int, float]) -> None:
    records, live_keys, waste = replay
    with engine.begin() as connection:
        connection.execute(
            compaction_tuning_log.update()
            .where(compaction_tuning_log.c.change_id == change_id)
            .values(
                records_after=records,
                live_keys_after=live_keys,
                waste_after=waste,
                verified_at=datetime.now(UTC),
            )
        )


def change(engine: Engine, change_id: int) -> list[LoggedSetting]:
    columns = [compaction_tuning_log.c[name] for name in LoggedSetting.__dataclass_fields__]
    with engine.connect() as connection:
        rows = connection.execute(
            sa.select(*columns)
            .where(compaction_tuning_log.c.change_id == change_id)
            .order_by(compaction_tuning_log.c.id)
        )
        return [LoggedSetting(**row._mapping) for row in rows]


def unverified(engine: Engine) -> list[int]:
    """Applied changes (not rollbacks) whose effect has not been measured yet."""
    create(engine)
    log = compaction_tuning_log
    with engine.connect() as connection:
        rows = connection.execute(
            sa.select(log.c.change_id)
            .where(log.c.verified_at.is_(None), log.c.rolls_back.is_(None))
            .distinct()
            .order_by(log.c.change_id)
        )
        return [row.change_id for row in rows]


def recent_changes(engine: Engine, limit: int = 20) -> list[dict[str, object]]:
    """The newest ``limit`` changes, newest first: per change its topic(s), the settings it
    set (old → new) and the replay waste measured before it and, once verified, after it."""
    create(engine)
    log = compaction_tuning_log
    with engine.connect() as connection:
        newest = (
            sa.select(log.c.change_id)
            .distinct()
            .order_by(log.c.change_id.desc())
            .limit(limit)
            .subquery()
        )
        rows = connection.execute(
            sa.select(log)
            .where(log.c.change_id.in_(sa.select(newest.c.change_id)))
            .order_by(log.c.change_id.desc(), log.c.id)
        )
        changes: dict[int, dict[str, object]] = {}
        for row in rows:
            change = changes.setdefault(
                row.change_id,
                {
                    "change_id": row.change_id,
                    "applied_at": row.applied_at,
                    "run_by": row.run_by,
                    "rolls_back": row.rolls_back,
                    "waste_before": row.waste_before,
                    "waste_after": row.waste_after,
                    "verified_at": row.verified_at,
                    "settings": [],
                },
            )
            change["settings"].append(
                {
                    "topic": row.topic,
                    "setting": row.setting,
                    "old": "(default)" if row.old_is_default else row.old_value,
                    "new": row.new_value,
                }
            )
    return list(changes.values())
