"""Tampering with the topics a reconciliation reads: outputs no join wrote, a position in two
outcomes, outputs whose content is not their sources'. Each test has a pipeline of its own
(a Kafka record cannot be taken back), but for the tamperings of one board each, which share
one (:func:`tampered`)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass

import pytest

from boardstream.joins.topics import SHIPPED_PIPELINE
from boardstream.pipelines import POSITIONS
from boardstream.reconcile.run import RunResult
from tests.adversarial.conftest import fresh_pipeline
from tests.adversarial.world import (
    NOW,
    altered,
    as_source_gave,
    column,
    content_column,
    dead_letter,
    detail_records,
    failures,
    forge,
    reconcile,
    records_of,
    without_position,
)
from tests.pipeline import Pipeline


def test_untouched_topics_give_no_finding(fresh: Pipeline) -> None:
    result = reconcile(fresh)
    assert failures(result) == {}, "\n".join(result.summary())
    assert result.reconciliation.equations() == [
        line for line in result.reconciliation.equations() if "missing 0 + conflicting 0" in line
    ]


def test_a_second_different_join_of_one_board(fresh: Pipeline) -> None:
    """A replay is an exact copy; a second record of the same board at the same position with
    another member version (its profile consistent with that version) is not the join's."""
    fresh.send_row(1, NOW + 60, nickname="m1-renamed")
    (b1,) = detail_records(fresh, "b1")
    member_partition, member_offset, member = records_of(
        fresh.settings, fresh.settings.member_topic, "1"
    )[-1]
    forged = as_source_gave(fresh, without_position(fresh, b1), "table", json.loads(member))
    forged.update(member_partition=member_partition, member_offset=member_offset)
    assert forged["nickname"] == "m1-renamed"
    forge(fresh.settings, fresh.settings.board_detail_topic, b"b1", forged)
    fresh.join()  # the join reads the member update too: nothing of its own changes
    assert failures(reconcile(fresh)) == {"conflicting": ["b1"]}


# Tamperings of one record each, made together in one pipeline per shipped declaration
# (:func:`tampered`): each test asserts what its record's tampering gives, and one that nothing
# else is found. A check that missed one kind, or found one where it should not, fails both.
TAMPERED = {
    "replay": "b1",  # an exact copy of b1's record: a replay, reported, not failed
    "imposter": "b2",  # another record's joined record at b2's position
    "dead_letter": "b3",  # a dead letter for the joined b3
    "unmatched": "b4",  # an unmatched record for the joined b4
    "content": "b6",  # b6's record with another value of a stream field
    "row": "b8",  # b8's record naming a table row that never existed
}


@dataclass(frozen=True)
class Tampered:
    result: RunResult
    label: str  # how a run names the stream record at partition 0, offset 10**9

    def failures(self) -> dict[str, list[str]]:
        return failures(self.result)


@pytest.fixture(scope="module", params=[SHIPPED_PIPELINE, "orders"])
def tampered(kafka, spark, postgres, tmp_path_factory, request) -> Tampered:
    """One pipeline per shipped declaration, every tampering above and two records naming no
    source record: one that never was (``ghost``) and a dead letter of an offset never
    written; reconciled by an incremental run and a full one, which must agree
    (:func:`.world.reconcile`)."""
    workdir = tmp_path_factory.mktemp("tampered")
    pipeline = fresh_pipeline(kafka, spark, postgres, workdir, request, request.param)
    settings, topics = pipeline.settings, pipeline.topics
    detail = {
        record_id: without_position(pipeline, record)
        for record_id in TAMPERED.values()
        for record in detail_records(pipeline, record_id)
    }
    key = pipeline.table.key
    joins = pipeline.deployed.pipeline.join_column
    stream_partition, stream_offset = (column(pipeline, f"stream.{p}") for p in POSITIONS)
    forge(settings, topics.joined, b"b1", detail["b1"])
    forge(settings, topics.joined, b"imposter", {**detail["b2"], key: "imposter"})
    b3 = detail["b3"]
    forge(
        settings,
        topics.dead_letters,
        b"b3",
        dead_letter(pipeline, b3[stream_partition], b3[stream_offset]),
    )
    forge(settings, topics.unmatched, b"b4", {**detail["b4"], "reason": "member_missing"})
    content = content_column(pipeline, "stream")
    forge(
        settings,
        topics.joined,
        b"b6",
        {**detail["b6"], content: altered(detail["b6"].get(content))},
    )
    never = 777 if isinstance(detail["b8"][joins], int) else "never"
    row_offset = column(pipeline, "table.ROWOFFSET")
    forge(settings, topics.joined, b"b8", {**detail["b8"], joins: never, row_offset: 10**9})
    ghost = {key: "ghost", joins: detail["b1"][joins], stream_partition: 0, stream_offset: 10**9}
    forge(settings, topics.joined, b"ghost", ghost)
    forge(settings, topics.dead_letters, b"x", dead_letter(pipeline, 0, 10**9))
    return Tampered(reconcile(pipeline), f"{topics.stream}[0]@1000000000")


def found_for(tampered: Tampered, *ids: str) -> dict[str, list[str]]:
    """The failing findings naming any of ``ids``, with those ids."""
    found = {
        kind: sorted(set(examples) & set(ids)) for kind, examples in tampered.failures().items()
    }
    return {kind: named for kind, named in found.items() if named}


def test_nothing_but_the_tamperings_is_found(tampered: Tampered) -> None:
    assert {kind: sorted(ids) for kind, ids in tampered.failures().items()} == {
        "extra": sorted([tampered.label, "ghost", "imposter"]),
        "conflicting": ["b2", "b3", "b4", "b6", "b8"],
        "altered_output": ["b6", "b8"],
        "referential": ["b8"],
    }, "\n".join(tampered.result.summary())
    # A second record at a position is reported as a replay, whatever it holds: b6's and b8's
    # fail besides.
    replays = tampered.result.reconciliation.findings["topic_replays"]
    assert replays.examples == ["b1", "b6", "b8"]


def test_a_replayed_output_is_reported_not_failed(tampered: Tampered) -> None:
    """The Kafka sink is at-least-once: an exact copy of a record is a replay."""
    assert found_for(tampered, "b1") == {}
    assert "b1" in tampered.result.reconciliation.findings["topic_replays"].examples


def test_detail_naming_no_source_board(tampered: Tampered) -> None:
    assert found_for(tampered, "ghost") == {"extra": ["ghost"]}


def test_detail_naming_another_boards_position(tampered: Tampered) -> None:
    """The imposter is extra, and b2's position now holds two different joined records."""
    assert found_for(tampered, "imposter", "b2") == {"extra": ["imposter"], "conflicting": ["b2"]}


def test_dead_letter_for_a_joined_board(tampered: Tampered) -> None:
    """Another job dead-letters a position the join joined: source 1 = joined 1 + dead 1 was
    a pass before; now the position is in two outcomes."""
    assert found_for(tampered, "b3") == {"conflicting": ["b3"]}
    counts = tampered.result.reconciliation.counts
    assert counts["read"] == sum(
        counts[k]
        for k in ("joined", "unmatched", "dead_lettered", "pending", "missing", "conflicting")
    )


def test_unmatched_record_for_a_joined_board(tampered: Tampered) -> None:
    assert found_for(tampered, "b4") == {"conflicting": ["b4"]}


def test_dead_letter_naming_no_source_board(tampered: Tampered) -> None:
    assert found_for(tampered, tampered.label) == {"extra": [tampered.label]}


def test_output_with_altered_board_fields(tampered: Tampered) -> None:
    """Same record, same provenance, another value of a stream field: not what the join made
    of its source.
    Not a replay either: b6's position now holds two different joined records."""
    assert found_for(tampered, "b6") == {"altered_output": ["b6"], "conflicting": ["b6"]}


def test_output_naming_a_member_that_never_existed(tampered: Tampered) -> None:
    found = found_for(tampered, "b8")
    assert found == {"referential": ["b8"], "altered_output": ["b8"], "conflicting": ["b8"]}


def forge_early_output(pipeline: Pipeline) -> None:
    """A board-detail record, member 1's profile, for board ``early``, which the join has not
    read: as the join would write it once it reads it."""
    pipeline.send_record("early", 1, NOW + 50)
    partition, offset, source = records_of(pipeline.settings, pipeline.topics.stream, "early")[-1]
    (b1,) = detail_records(pipeline, "b1")  # member 1's profile, as early names it
    forged = as_source_gave(pipeline, without_position(pipeline, b1), "stream", json.loads(source))
    forged.update(board_partition=partition, board_offset=offset)
    forge(pipeline.settings, pipeline.topics.joined, b"early", forged)


def test_output_for_a_board_the_join_has_not_read(fresh: Pipeline) -> None:
    """No later join batch has begun, so nothing the join wrote can name an unread board."""
    forge_early_output(fresh)
    result = reconcile(fresh)
    assert failures(result) == {"extra": ["early"]}
    assert result.reconciliation.findings["not_yet_read"].examples == ["early"]


def test_output_for_an_unread_board_beside_a_forged_next_batch(fresh: Pipeline) -> None:
    """The join's last offset log entry copied, checksum and all, as the next batch's: before,
    any later entry made every output count as the batch under way's, and the run passed. The
    next batch reads only up to the end offsets it logged, here the last batch's own."""
    forge_early_output(fresh)
    offsets = fresh.workdir / f"{fresh.settings.board_topic}-join" / "offsets"
    last = max(offsets.glob("[0-9]*"), key=lambda p: int(p.name))
    following = offsets / str(int(last.name) + 1)
    shutil.copyfile(last, following)
    shutil.copyfile(offsets / f".{last.name}.crc", offsets / f".{following.name}.crc")
    result = reconcile(fresh)
    assert failures(result) == {"extra": ["early"]}
    assert result.reconciliation.findings["not_yet_read"].examples == ["early"]


def test_output_with_an_altered_member_profile(fresh: Pipeline) -> None:
    """The member fields must be those of the member version the record names."""
    (b7,) = detail_records(fresh, "b7")
    forged = without_position(fresh, b7)
    forge(fresh.settings, fresh.settings.board_detail_topic, b"b7", {**forged, "city": "Busan"})
    expected = {"altered_output": ["b7"], "conflicting": ["b7"]}
    assert failures(reconcile(fresh)) == expected
    fresh.sink()  # the sink loads the forged record: the table now agrees with it, still caught
    assert failures(reconcile(fresh)) == expected


def test_a_forged_sink_dead_letter_does_not_hide_an_altered_profile(fresh: Pipeline) -> None:
    """The member checks leave out a record the sink dead-lettered only when it names no member
    version (it did not parse): a dead letter forged for a well-formed joined record whose
    member fields were altered leaves it checked, and caught."""
    (b7,) = detail_records(fresh, "b7")
    forged = without_position(fresh, b7)
    settings = fresh.settings
    forge(settings, settings.board_detail_topic, b"b7", {**forged, "city": "Busan"})
    partition, offset, _ = records_of(settings, settings.board_detail_topic, "b7")[-1]
    refused = {
        **dead_letter(fresh, partition, offset),
        "source_topic": settings.board_detail_topic,
    }
    forge(settings, settings.dlq_topic, b"b7", refused)
    assert failures(reconcile(fresh))["altered_output"] == ["b7"]


def test_rows_whose_records_retention_deleted_are_unverifiable(fresh: Pipeline) -> None:
    """After retention (here: delete_records) every board-detail record and its source are
    gone: the table's rows can no longer be checked, which is reported, not called extra."""
    from confluent_kafka import OFFSET_END, TopicPartition

    from boardstream.kafka.clients import admin_client

    settings = fresh.settings
    admin = admin_client(settings)
    doomed = [
        TopicPartition(topic, p, OFFSET_END)
        for topic in (settings.board_topic, settings.board_detail_topic)
        for p in admin.list_topics(topic, timeout=10).topics[topic].partitions
    ]
    for future in admin.delete_records(doomed).values():
        future.result()
    result = reconcile(fresh)
    # Passed, Great Expectations too: such rows are expected (was FAILED on the row count).
    assert result.passed and failures(result) == {}, "\n".join(result.summary())
    unverifiable = result.reconciliation.findings["unverifiable_in_table"]
    assert unverifiable.examples == sorted(["ctl", "upd", *(f"b{i}" for i in range(1, 9))])
