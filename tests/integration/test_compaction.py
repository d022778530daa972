"""Compaction tuning on a real broker: measure, dry run, apply, the cleaner's effect, rollback."""

from __future__ import annotations

import time
import uuid

import pytest

from boardstream import database
from boardstream.compaction import apply, tuning_log
from boardstream.compaction.measure import measure_topic
from boardstream.compaction.policy import Targets
from boardstream.compaction.tuning import Selection, select, tune
from boardstream.errors import BoardstreamError, BrokerUnreachableError, UnknownTopicError
from boardstream.generator.plan import GeneratorOptions
from boardstream.generator.producer import produce
from boardstream.kafka.clients import admin_client, reliable_producer
from boardstream.kafka.topics import TopicSpec, create_topics, describe_topics, platform_topics
from boardstream.settings import Settings
from tests.fixtures import cli

MEMBERS, DELETES, VERSIONS = 4_000, 100, 10


@pytest.fixture(scope="module")
def table_topic(kafka: Settings, tmp_path_factory) -> Settings:
    """An update-heavy member table topic: 10 versions per key and some tombstones, in the
    active segment (Kafka's default 1 GiB segments), so nothing could be cleaned yet."""
    var_dir = tmp_path_factory.mktemp("compaction")
    settings = kafka.with_topic_prefix(f"cmp{uuid.uuid4().hex[:6]}", var_dir=var_dir)
    admin = admin_client(settings)
    create_topics(admin, settings, platform_topics(settings))
    other = TopicSpec(f"{settings.member_topic}-other", 1, 1, {"cleanup.policy": "compact"})
    create_topics(admin, settings, [other])
    options = GeneratorOptions(
        members=MEMBERS, boards=0, update_ratio=VERSIONS - 1, deletes=DELETES, seed=7
    )
    # Uncompressed, so the data on disk is well over the 1 MiB segment floor per partition.
    produce(settings, options, var_dir / "manifest.json", 60, {"compression.type": "none"})
    return settings


def configs(settings: Settings, topics: list[str]) -> dict[str, dict]:
    admin = admin_client(settings)
    return {d.name: d.configs for d in describe_topics(admin, settings, topics)}


def all_topics(settings: Settings) -> list[str]:
    return [spec.name for spec in platform_topics(settings)] + [f"{settings.member_topic}-other"]


def test_measure_counts_what_a_restore_replays(table_topic: Settings) -> None:
    settings = table_topic
    measured = measure_topic(admin_client(settings), settings, settings.member_topic, False)
    assert measured.records == MEMBERS * VERSIONS + DELETES
    assert measured.live_keys == MEMBERS - DELETES
    assert sum(p.tombstones for p in measured.partitions) == DELETES
    assert measured.waste == pytest.approx(1 - 3_900 / 40_100)
    assert measured.configs["segment.bytes"] == ("1073741824", True)


def test_dry_run_apply_verify_rollback(table_topic: Settings) -> None:
    settings = table_topic
    admin = admin_client(settings)
    engine = database.engine(settings.database)
    selection = Selection(
        include=(f"{settings.member_topic.rsplit('-', 1)[0]}-*",), exclude=("*-other",)
    )
    targets = Targets(max_replay_waste=0.05, max_consumer_downtime_ms=3_600_000)
    before = configs(settings, all_topics(settings))
    assert select(admin, settings, selection) == [settings.member_topic]

    dry = tune(admin, settings, engine, selection, targets, False, "test", show_progress=False)
    assert [t.change_id for t in dry] == [None]
    assert configs(settings, all_topics(settings)) == before

    (applied,) = tune(
        admin, settings, engine, selection, targets, True, "test", show_progress=False
    )
    assert applied.change_id is not None
    changed = {p.setting: p.new_value for p in applied.planned if p.changes}
    assert {"segment.bytes", "min.cleanable.dirty.ratio", "max.compaction.lag.ms"} <= set(changed)
    after = configs(settings, all_topics(settings))
    member = settings.member_topic
    assert {name: after[member][name] for name in changed} == {
        name: (value, False) for name, value in changed.items()
    }
    untouched = {name: v for name, v in after[member].items() if name not in changed}
    assert untouched == {name: v for name, v in before[member].items() if name not in changed}
    assert {t: c for t, c in after.items() if t != member} == {
        t: c for t, c in before.items() if t != member
    }
    logged = tuning_log.change(engine, applied.change_id)
    assert {(s.setting, s.old_value, s.new_value) for s in logged} == {
        (name, before[member][name][0], value) for name, value in changed.items()
    }
    assert all(s.old_is_default and s.run_by == "test" and s.reason for s in logged)
    assert logged[0].records_before == MEMBERS * VERSIONS + DELETES

    # The active segment rolls on the next append now that it is over segment.bytes; the
    # cleaner then compacts the rolled segment. A few more updates, as a live topic gets.
    producer = reliable_producer(settings)
    for member_id in range(1, 31):
        producer.produce(member, key=str(member_id).encode(), value=b'{"nudge": true}')
    assert producer.flush(10) == 0
    floor = MEMBERS - DELETES + DELETES + 30  # live keys, retained tombstones, the nudges
    deadline = time.monotonic() + 120
    while True:
        verified = apply.verify(admin, settings, engine, applied.change_id, show_progress=False)
        if verified.records <= floor or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert verified.live_keys == MEMBERS - DELETES
    assert verified.records <= floor, "the cleaner did not compact within 120 s"
    assert verified.waste < 0.05 < logged[0].waste_before
    (row, *_) = tuning_log.change(engine, applied.change_id)
    assert (row.records_after, row.waste_after) == (verified.records, verified.waste)

    rollback_id = apply.rollback(admin, settings, engine, applied.change_id, "test")
    assert configs(settings, all_topics(settings)) == before  # defaults again, not copies
    undo = tuning_log.change(engine, rollback_id)
    assert {(s.setting, s.new_value, s.rolls_back) for s in undo} == {
        (name, before[member][name][0], applied.change_id) for name in changed
    }


def test_bad_input_changes_nothing(table_topic: Settings) -> None:
    settings = table_topic
    admin = admin_client(settings)
    engine = database.engine(settings.database)
    before = configs(settings, all_topics(settings))
    with pytest.raises(UnknownTopicError, match="nope"):
        measure_topic(admin, settings, "nope")
    with pytest.raises(BoardstreamError, match="no compacted topic matches nope-"):
        tune(admin, settings, engine, Selection(("nope-*",)), Targets(), True, "test")
    with pytest.raises(BoardstreamError, match="not compacted"):
        measure_topic(admin, settings, settings.board_topic)
    with pytest.raises(BoardstreamError, match="invalid target: restore rate"):
        tune(admin, settings, engine, Selection(), Targets(restore_rate=-1), True, "test")
    with pytest.raises(BoardstreamError, match="no change 999999"):
        apply.rollback(admin, settings, engine, 999_999, "test")
    assert configs(settings, all_topics(settings)) == before

    down = settings.model_copy(update={"bootstrap_servers": "localhost:1", "connect_timeout_s": 2})
    with pytest.raises(BrokerUnreachableError):
        tune(admin_client(down), down, engine, Selection(), Targets(), True, "test")


def test_cli_refuses_bad_targets_and_missing_change(table_topic: Settings) -> None:
    negative = cli(table_topic, "compaction", "apply", "--restore-rate", "-5", "--execute")
    assert negative.returncode == 2
    assert "argument --restore-rate: must be > 0, got '-5'" in negative.stderr
    missing = cli(table_topic, "compaction", "rollback")
    assert (missing.returncode, missing.stderr.strip()) == (
        1,
        "boardstream: error: compaction rollback needs --change ID",
    )
    dry = cli(table_topic, "compaction", "apply", "--topic", table_topic.member_topic)
    assert dry.returncode == 0, dry.stderr
    assert "dry run: nothing applied" in dry.stdout
