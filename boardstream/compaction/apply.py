"""Apply recommendations with ``incremental_alter_configs`` (dry-run unless told otherwise),
log each change, roll a change back, and verify its effect.

Only the listed settings are touched, one topic at a time; every change is read back from the
broker before it is logged, so the log never claims what the broker did not take.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)
from sqlalchemy.engine import Engine

from boardstream.compaction import tuning_log
from boardstream.compaction.measure import TopicMeasurement, is_compacted, measure_topic
from boardstream.compaction.policy import Recommendation
from boardstream.errors import BoardstreamError
from boardstream.kafka.topics import describe_topics
from boardstream.settings import Settings


@dataclass(frozen=True)
class PlannedSetting(tuning_log.SettingChange):
    """A recommendation next to the topic's current value."""

    @property
    def changes(self) -> bool:
        return self.old_value != self.new_value

    def line(self) -> str:
        old = f"{self.old_value}{' (default)' if self.old_is_default else ''}"
        verdict = f"{old} -> {self.new_value}" if self.changes else f"{old} (unchanged)"
        return f"{self.topic} {self.setting}: {verdict}: {self.reason}"


def plan(
    measurement: TopicMeasurement, recommendations: list[Recommendation]
) -> list[PlannedSetting]:
    """Recommendations next to the topic's current values."""
    planned = []
    for rec in recommendations:
        old, is_default = measurement.configs.get(rec.setting, (None, True))
        planned.append(
            PlannedSetting(measurement.topic, rec.setting, old, is_default, rec.value, rec.reason)
        )
    return planned


def replay_of(measurement: TopicMeasurement) -> tuple[int, int, float]:
    return measurement.records, measurement.live_keys, measurement.waste


def apply(
    admin: AdminClient,
    settings: Settings,
    engine: Engine,
    measurement: TopicMeasurement,
    planned: list[PlannedSetting],
    run_by: str,
) -> int | None:
    """Set every planned setting that differs from the current value; returns the change id
    (None when nothing differed). The topic must still be compacted."""
    changes = [p for p in planned if p.changes]
    if not changes:
        return None
    _require_compacted(admin, settings, measurement.topic)
    _alter(
        admin,
        settings,
        measurement.topic,
        [
            ConfigEntry(p.setting, p.new_value, incremental_operation=AlterConfigOpType.SET)
            for p in changes
        ],
    )
    _read_back(
        admin, settings, measurement.topic, {p.setting: (p.new_value, False) for p in changes}
    )
    tuning_log.create(engine)
    rows = [
        {
            "topic": p.topic,
            "setting": p.setting,
            "old_value": p.old_value,
            "old_is_default": p.old_is_default,
            "new_value": p.new_value,
            "reason": p.reason,
            "run_by": run_by,
        }
        for p in changes
    ]
    return tuning_log.record(engine, rows, replay_of(measurement))


def rollback(
    admin: AdminClient, settings: Settings, engine: Engine, change_id: int, run_by: str
) -> int:
    """Restore the values change ``change_id`` replaced (deleting the topic's override where
    the old value was a default); logged as a change of its own, which is returned."""
    tuning_log.create(engine)
    logged = tuning_log.change(engine, change_id)
    if not logged:
        raise BoardstreamError(f"no change {change_id} in compaction_tuning_log")
    topic = logged[0].topic
    (description,) = describe_topics(admin, settings, [topic])
    entries = [
        ConfigEntry(s.setting, None, incremental_operation=AlterConfigOpType.DELETE)
        if s.old_is_default
        else ConfigEntry(s.setting, s.old_value, incremental_operation=AlterConfigOpType.SET)
        for s in logged
    ]
    _alter(admin, settings, topic, entries)
    _read_back(
        admin,
        settings,
        topic,
        {s.setting: (s.old_value, s.old_is_default) for s in logged},
    )
    rows = []
    for s in logged:
        current, is_default = description.configs.get(s.setting, (None, True))
        rows.append(
            {
                "topic": topic,
                "setting": s.setting,
                "old_value": current,
                "old_is_default": is_default,
                "new_value": s.old_value,
                "reason": f"rollback of change {change_id}",
                "run_by": run_by,
                "rolls_back": change_id,
            }
        )
    return tuning_log.record(engine, rows, None)


def verify(
    admin: AdminClient,
    settings: Settings,
    engine: Engine,
    change_id: int,
    show_progress: bool = True,
) -> TopicMeasurement:
    """Re-measure the topic of ``change_id`` and log the replay after the change."""
    tuning_log.create(engine)
    logged = tuning_log.change(engine, change_id)
    if not logged:
        raise BoardstreamError(f"no change {change_id} in compaction_tuning_log")
    after = measure_topic(admin, settings, logged[0].topic, show_progress)
    tuning_log.record_verification(engine, change_id, replay_of(after))
    return after


def _require_compacted(admin: AdminClient, settings: Settings, topic: str) -> None:
    (description,) = describe_topics(admin, settings, [topic])
    if not is_compacted(description.configs.get("cleanup.policy", (None, True))[0]):
        raise BoardstreamError(f"topic {topic} is not compacted; its configs were not touched")


def _alter(admin: AdminClient, settings: Settings, topic: str, entries: list[ConfigEntry]) -> None:
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    futures = admin.incremental_alter_configs(
        [resource], request_timeout=settings.connect_timeout_s
    )
    for future in futures.values():
        try:
            future.result()
        except KafkaException as error:
            raise BoardstreamError(
                f"altering {topic} failed, nothing changed: {error.args[0].str()}"
            ) from None


def _read_back(
    admin: AdminClient, settings: Settings, topic: str, expected: dict[str, tuple[str | None, bool]]
) -> None:
    """Wait, within the connect timeout, until the broker describes what it was told.

    Under KRaft the controller takes the change and each broker applies it from the metadata
    log a moment later, so the first describe may still show the old values.
    """
    deadline = time.monotonic() + settings.connect_timeout_s
    while True:
        (description,) = describe_topics(admin, settings, [topic])
        wrong = {
            name: description.configs.get(name)
            for name, (value, is_default) in expected.items()
            if (description.configs.get(name, (None, True))[1] != is_default)
            or (not is_default and description.configs[name][0] != value)
        }
        if not wrong:
            return
        if time.monotonic() > deadline:
            raise BoardstreamError(f"{topic}: the broker did not take {wrong}")
        time.sleep(0.2)
