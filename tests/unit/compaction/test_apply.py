"""Applying, rolling back and verifying cleaner settings against a fake broker (its configs,
``incremental_alter_configs``) and a SQLite log: only settings that differ are SET, a rollback
SETs old values back or DELETEs the override where the old value was a default, every change is
read back before it is logged, and a refusal or a failure logs nothing. The real broker's side
is the integration tier's (test_compaction)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AlterConfigOpType, ResourceType
from sqlalchemy.engine import Engine

from boardstream import database
from boardstream.compaction import apply as applying
from boardstream.compaction import tuning_log
from boardstream.compaction.apply import PlannedSetting, apply, plan, replay_of, rollback, verify
from boardstream.compaction.measure import PartitionMeasurement, TopicMeasurement
from boardstream.compaction.policy import Recommendation
from boardstream.errors import BoardstreamError
from boardstream.kafka.topics import TopicDescription
from boardstream.settings import Settings

DEFAULTS = {"segment.ms": "604800000", "segment.bytes": "1073741824", "cleanup.policy": "delete"}


class Future:
    def __init__(self, error: KafkaException | None) -> None:
        self.error = error

    def result(self) -> None:
        if self.error:
            raise self.error


class Broker:
    """One topic's configs as a broker keeps them: (value, is_default) by name."""

    def __init__(self, **overrides: str) -> None:
        self.configs = {name: (value, True) for name, value in DEFAULTS.items()}
        self.configs.update({name.replace("_", "."): (v, False) for name, v in overrides.items()})
        self.altered: list[list[tuple[str, str | None, AlterConfigOpType]]] = []
        self.refuse: KafkaException | None = None
        self.ignore: set[str] = set()  # settings it acknowledges but does not take
        self.rewrite: dict[str, str] = {}  # settings it takes with another value
        self.stale_describes = 0  # describes that still show the configs from before an alter
        self.before: dict[str, tuple[str | None, bool]] = {}
        self.timeout = 10.0

    def incremental_alter_configs(self, resources, request_timeout: float):
        (resource,) = resources
        assert resource.restype == ResourceType.TOPIC and request_timeout == self.timeout
        self.before = dict(self.configs)
        entries = [(e.name, e.value, e.incremental_operation) for e in resource.incremental_configs]
        self.altered.append(entries)
        if self.refuse is None:
            for name, value, operation in entries:
                if name in self.ignore:
                    continue
                if operation == AlterConfigOpType.SET:
                    self.configs[name] = (self.rewrite.get(name, value), False)
                else:
                    self.configs[name] = (DEFAULTS.get(name), True)
        return {resource: Future(self.refuse)}

    def describe(self, topic: str) -> TopicDescription:
        configs = self.configs
        if self.stale_describes and self.before:
            self.stale_describes -= 1
            configs = self.before
        return TopicDescription(topic, dict(configs), {0: 10}, {0: 0})


def impatient(broker: Broker, settings: Settings) -> Settings:
    """Settings that give up on a broker's read-back within a fraction of a second."""
    broker.timeout = 0.3
    return settings.model_copy(update={"connect_timeout_s": 0.3})


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(var_dir=tmp_path)


@pytest.fixture
def engine(settings: Settings) -> Engine:
    return database.engine(settings.database)


@pytest.fixture(autouse=True)
def described(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        applying, "describe_topics", lambda broker, _s, topics: [broker.describe(topics[0])]
    )


def measured(broker: Broker, topic: str = "member") -> TopicMeasurement:
    partitions = [PartitionMeasurement(0, 10, 4, 1, 100, 1, 2)]
    return TopicMeasurement(topic, partitions, dict(broker.configs), 0.5)


def planned(broker: Broker, **values: str) -> list[PlannedSetting]:
    recommendations = [
        Recommendation(name.replace("_", "."), value, f"why {name}")
        for name, value in values.items()
    ]
    return plan(measured(broker), recommendations)


def logged(engine: Engine) -> list[tuple]:
    log = tuning_log.compaction_tuning_log
    with engine.connect() as connection:
        return connection.execute(
            sa.select(
                log.c.change_id,
                log.c.setting,
                log.c.old_value,
                log.c.old_is_default,
                log.c.new_value,
                log.c.reason,
                log.c.rolls_back,
                log.c.records_before,
            ).order_by(log.c.id)
        ).all()


def test_a_planned_setting_shows_its_current_value_and_the_change() -> None:
    change = PlannedSetting("member", "segment.ms", "604800000", True, "3600000", "roll sooner")
    assert change.changes is True
    assert change.line() == "member segment.ms: 604800000 (default) -> 3600000: roll sooner"
    same = PlannedSetting("member", "segment.ms", "3600000", False, "3600000", "roll sooner")
    assert same.changes is False
    assert same.line() == "member segment.ms: 3600000 (unchanged): roll sooner"


def test_plan_puts_each_recommendation_next_to_the_current_value() -> None:
    broker = Broker(cleanup_policy="compact", segment_ms="3600000")
    assert planned(
        broker, segment_ms="3600000", segment_bytes="1048576", delete_retention_ms="9"
    ) == [
        PlannedSetting("member", "segment.ms", "3600000", False, "3600000", "why segment_ms"),
        PlannedSetting(
            "member", "segment.bytes", "1073741824", True, "1048576", "why segment_bytes"
        ),
        # Not described at all: unknown, and a default.
        PlannedSetting("member", "delete.retention.ms", None, True, "9", "why delete_retention_ms"),
    ]


def test_replay_of_is_records_live_keys_and_waste() -> None:
    assert replay_of(measured(Broker())) == (10, 4, pytest.approx(0.6))


def test_apply_sets_only_what_differs_reads_it_back_and_logs_it(settings, engine) -> None:
    broker = Broker(cleanup_policy="compact", segment_ms="3600000")
    plans = planned(broker, segment_ms="3600000", segment_bytes="1048576")
    assert apply(broker, settings, engine, measured(broker), plans, "cli:me") == 1
    assert broker.altered == [[("segment.bytes", "1048576", AlterConfigOpType.SET)]]
    assert broker.configs["segment.bytes"] == ("1048576", False)
    assert logged(engine) == [
        (1, "segment.bytes", "1073741824", True, "1048576", "why segment_bytes", None, 10)
    ]
    (entry,) = tuning_log.change(engine, 1)
    assert (entry.run_by, entry.waste_before) == ("cli:me", pytest.approx(0.6))


def test_apply_with_nothing_to_change_touches_nothing(settings, engine) -> None:
    broker = Broker(cleanup_policy="compact", segment_ms="3600000")
    plans = planned(broker, segment_ms="3600000")
    assert apply(broker, settings, engine, measured(broker), plans, "cli:me") is None
    assert broker.altered == []
    assert not sa.inspect(engine).has_table("compaction_tuning_log")


def test_apply_refuses_a_topic_no_longer_compacted(settings, engine) -> None:
    broker = Broker(cleanup_policy="compact")
    plans = planned(broker, segment_ms="3600000")
    broker.configs["cleanup.policy"] = ("delete", False)  # changed since it was measured
    with pytest.raises(
        BoardstreamError, match=r"^topic member is not compacted; its configs were not touched$"
    ):
        apply(broker, settings, engine, measured(broker), plans, "cli:me")
    assert broker.altered == []


def test_a_refused_alter_is_reported_and_not_logged(settings, engine) -> None:
    broker = Broker(cleanup_policy="compact")
    broker.refuse = KafkaException(KafkaError(KafkaError.POLICY_VIOLATION, "segment.ms too low"))
    plans = planned(broker, segment_ms="1")
    with pytest.raises(
        BoardstreamError, match=r"^altering member failed, nothing changed: segment.ms too low$"
    ):
        apply(broker, settings, engine, measured(broker), plans, "cli:me")
    assert not sa.inspect(engine).has_table("compaction_tuning_log")


def test_a_setting_the_broker_did_not_take_is_not_logged(settings, engine) -> None:
    broker = Broker(cleanup_policy="compact")
    broker.ignore = {"segment.ms"}
    plans = planned(broker, segment_ms="3600000", segment_bytes="1048576")
    with pytest.raises(BoardstreamError) as refused:
        apply(broker, impatient(broker, settings), engine, measured(broker), plans, "cli:me")
    assert str(refused.value) == (
        "member: the broker did not take {'segment.ms': ('604800000', True)}"
    )
    assert not sa.inspect(engine).has_table("compaction_tuning_log")


def test_a_setting_the_broker_took_with_another_value_is_not_logged(settings, engine) -> None:
    broker = Broker(cleanup_policy="compact")
    broker.rewrite = {"segment.ms": "3600001"}
    with pytest.raises(BoardstreamError) as refused:
        apply(
            broker,
            impatient(broker, settings),
            engine,
            measured(broker),
            planned(broker, segment_ms="3600000"),
            "x",
        )
    assert str(refused.value) == (
        "member: the broker did not take {'segment.ms': ('3600001', False)}"
    )
    assert not sa.inspect(engine).has_table("compaction_tuning_log")


def test_a_broker_that_shows_the_change_late_is_waited_for(settings, engine) -> None:
    # KRaft: the controller takes the alter; the describing broker applies it a moment later.
    broker = Broker(cleanup_policy="compact")
    broker.stale_describes = 3
    plans = planned(broker, segment_ms="3600000")
    assert apply(broker, settings, engine, measured(broker), plans, "cli:me") == 1
    assert broker.stale_describes == 0
    assert broker.configs["segment.ms"] == ("3600000", False)


def test_rollback_restores_old_values_and_defaults_and_is_a_change_itself(settings, engine) -> None:
    broker = Broker(cleanup_policy="compact", segment_ms="3600000")
    plans = planned(broker, segment_ms="7200000", segment_bytes="1048576")
    assert apply(broker, settings, engine, measured(broker), plans, "cli:me") == 1
    assert rollback(broker, settings, engine, 1, "airflow:x") == 2
    assert broker.altered[-1] == [
        ("segment.ms", "3600000", AlterConfigOpType.SET),  # it had an override: set it back
        ("segment.bytes", None, AlterConfigOpType.DELETE),  # it was a default: drop ours
    ]
    assert broker.configs["segment.ms"] == ("3600000", False)
    assert broker.configs["segment.bytes"] == ("1073741824", True)
    assert logged(engine)[2:] == [
        (2, "segment.ms", "7200000", False, "3600000", "rollback of change 1", 1, None),
        (2, "segment.bytes", "1048576", False, "1073741824", "rollback of change 1", 1, None),
    ]
    assert {s.run_by for s in tuning_log.change(engine, 2)} == {"airflow:x"}


def test_rollback_logs_the_value_it_replaced_even_if_changed_since(settings, engine) -> None:
    broker = Broker(cleanup_policy="compact")
    apply(broker, settings, engine, measured(broker), planned(broker, segment_ms="7200000"), "x")
    broker.configs["segment.ms"] = ("1800000", False)  # changed by hand after the apply
    rollback(broker, settings, engine, 1, "x")
    (undone,) = tuning_log.change(engine, 2)
    assert (undone.old_value, undone.old_is_default, undone.new_value) == (
        "1800000",
        False,
        "604800000",
    )
    assert broker.configs["segment.ms"] == ("604800000", True)


@pytest.mark.parametrize("undo", [rollback, verify])
def test_an_unknown_change_is_refused(undo, settings, engine) -> None:
    args = ("cli:me",) if undo is rollback else ()
    with pytest.raises(BoardstreamError, match=r"^no change 9 in compaction_tuning_log$"):
        undo(Broker(), settings, engine, 9, *args)


def test_verify_measures_the_changes_topic_and_logs_the_replay_after(
    monkeypatch, settings, engine
) -> None:
    broker = Broker(cleanup_policy="compact")
    apply(broker, settings, engine, measured(broker), planned(broker, segment_ms="1"), "cli")
    asked = []
    after = TopicMeasurement("member", [PartitionMeasurement(0, 5, 4, 0, 50, 1, 2)], {}, 0.1)
    monkeypatch.setattr(
        applying,
        "measure_topic",
        lambda _admin, _settings, topic, progress: asked.append((topic, progress)) or after,
    )
    assert verify(broker, settings, engine, 1, show_progress=False) is after
    assert asked == [("member", False)]
    (entry,) = tuning_log.change(engine, 1)
    assert (entry.records_before, entry.records_after) == (10, 5)
    assert entry.waste_after == pytest.approx(0.2)
