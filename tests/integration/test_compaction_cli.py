"""The compaction commands of docs/COMMANDS.md as a user types them, on a broker of this
module's own (so `measure` and `apply --execute` without --topic see only this module's compacted
topics): measure → recommend → apply --execute → verify → rollback, with the topics' configs read
back from the broker after each step."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

from boardstream import database
from boardstream.compaction import tuning_log
from boardstream.compaction.policy import SETTINGS
from boardstream.generator.plan import GeneratorOptions
from boardstream.generator.producer import produce
from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import TopicSpec, create_topics, platform_topics
from boardstream.settings import Settings
from boardstream.stack.kafka_broker import KafkaBroker
from tests.fixtures import cli, isolated_settings, world_readable_dir

pytestmark = pytest.mark.integration

MEMBERS, DELETES, VERSIONS = 500, 10, 4
RECORDS = MEMBERS * VERSIONS + DELETES  # 2,010 records, 490 live keys: waste 75.6%
OTHER = "member-other"
TUNED = set(SETTINGS)  # the settings recommend/apply change


@pytest.fixture(scope="module")
def broker() -> Iterator[Settings]:
    """A broker of its own with the platform's topics (only `member` is compacted), a second
    compacted topic `member-other`, and an update-heavy member table in `member`."""
    var_dir = world_readable_dir("boardstream-compaction-cli-")
    settings = isolated_settings(var_dir)
    kafka = KafkaBroker(settings)
    kafka.start()
    try:
        admin = admin_client(settings)
        create_topics(admin, settings, platform_topics(settings))
        create_topics(admin, settings, [TopicSpec(OTHER, 1, 1, {"cleanup.policy": "compact"})])
        options = GeneratorOptions(
            members=MEMBERS, boards=0, update_ratio=VERSIONS - 1, deletes=DELETES, seed=3
        )
        produce(settings, options, var_dir / "manifest.json", 60, {"compression.type": "none"})
        yield settings
    finally:
        kafka.process.stop()
        shutil.rmtree(var_dir, ignore_errors=True)


def own_configs(settings: Settings, topic: str) -> dict[str, str]:
    """The configs set on the topic itself (not defaults), as the broker describes them."""
    admin = admin_client(settings)
    (future,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    topic_level = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    return {name: e.value for name, e in future.result().items() if e.source == topic_level}


def measured(topic: str, records: int, live: int, tombstones: int) -> str:
    """A measure line, the seconds it took left out."""
    waste = 1 - live / records
    return (
        f"{topic}: {records:,} records replayed, {live:,} live keys, {tombstones:,} tombstones, "
        f"waste {waste:.1%}"
    )


def ok(result: subprocess.CompletedProcess[str]) -> None:
    """Exit 0; stderr holds the progress lines only."""
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "error" not in result.stderr, result.stderr


def without_seconds(stdout: str) -> list[str]:
    return [re.sub(r" \(\d+\.\ds\)$", "", line) for line in stdout.splitlines()]


def test_measure_recommend_apply_verify_rollback(broker: Settings) -> None:
    member = measured("member", RECORDS, MEMBERS - DELETES, DELETES)

    everything = cli(broker, "compaction", "measure")
    ok(everything)
    lines = without_seconds(everything.stdout)
    # An empty topic replays nothing: no waste to speak of.
    other = f"{OTHER}: 0 records replayed, 0 live keys, 0 tombstones, waste 0.0%"
    assert sorted(lines) == sorted([member, other])
    pattern = cli(broker, "compaction", "measure", "--topic", "member*")
    ok(pattern)
    assert without_seconds(pattern.stdout) == lines
    excluded = cli(broker, "compaction", "measure", "--topic", "member*", "--exclude", "*-other")
    ok(excluded)
    assert without_seconds(excluded.stdout) == [member]

    before = {topic: own_configs(broker, topic) for topic in ("member", OTHER)}
    assert before == {"member": {"cleanup.policy": "compact"}, OTHER: {"cleanup.policy": "compact"}}

    targets = ["--max-replay-waste", "0.1", "--restore-budget", "5m"]
    recommend = cli(broker, "compaction", "recommend", *targets)
    ok(recommend)
    planned = planned_settings(recommend.stdout)
    assert set(planned["member"]) == TUNED
    assert recommend.stdout.count("  dry run: nothing applied\n") == 2
    assert {topic: own_configs(broker, topic) for topic in before} == before  # nothing altered

    applied = cli(broker, "compaction", "apply", "--execute", *targets)
    ok(applied)
    assert planned_settings(applied.stdout) == planned  # what recommend said, applied
    changes = dict(
        re.findall(r"^(\S+): .*\n(?:  .*\n)*?  applied as change (\d+)$", applied.stdout, re.M)
    )
    assert set(changes) == {"member", OTHER}, applied.stdout
    for topic in ("member", OTHER):
        changed = {s: new for s, (old, new) in planned[topic].items() if old != new}
        assert changed, f"{topic}: apply changed nothing"
        assert own_configs(broker, topic) == {"cleanup.policy": "compact", **changed}

    engine = database.engine(broker.database)
    change = int(changes["member"])
    verify = cli(broker, "compaction", "verify", "--change", str(change))
    ok(verify)
    (line,) = without_seconds(verify.stdout)
    (first, *_) = tuning_log.change(engine, change)
    assert first.records_before == RECORDS
    assert first.records_after is not None, "verify did not log the replay after"
    # The cleaner may have compacted since: the live keys are the same, the records fewer.
    assert line.startswith(f"member: {first.records_after:,} records replayed, 490 live keys, ")
    assert first.records_after <= RECORDS

    for topic, number in changes.items():
        rollback = cli(broker, "compaction", "rollback", "--change", number)
        ok(rollback)
        assert re.fullmatch(
            rf"change {number} rolled back \(logged as change \d+\)\n", rollback.stdout
        ), rollback.stdout
        assert own_configs(broker, topic) == before[topic]  # defaults again, not copies


def planned_settings(stdout: str) -> dict[str, dict[str, tuple[str, str]]]:
    """Per topic, each planned setting: (old value, new value) from the plan's lines."""
    planned: dict[str, dict[str, tuple[str, str]]] = {}
    for topic, setting, old, new in re.findall(
        r"^  (\S+) (\S+): (\S+)(?: \(default\))?(?: -> (\S+)| \(unchanged\)):", stdout, re.M
    ):
        planned.setdefault(topic, {})[setting] = (old, new or old)
    return planned
