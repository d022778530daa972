"""Tampering with ``board_detail``: every kind is found, with exactly the affected ids, and the
untouched table gives no finding at all. Each test changes the table of one shared pipeline;
the ``world`` fixture puts it back afterwards."""

from __future__ import annotations

from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec

from boardstream.kafka.clients import admin_client
from boardstream.reconcile.evidence.run_ledger import FULL, INCREMENTAL
from tests.adversarial.world import (
    detail_records,
    execute,
    failures,
    load_row,
    reconcile,
    reconcile_as,
    rows,
    verdict,
)
from tests.pipeline import Pipeline


def position(pipeline: Pipeline, board_id: str) -> tuple[int, int]:
    ((partition, offset),) = rows(
        pipeline.settings.database,
        "SELECT detail_partition, detail_offset FROM board_detail WHERE board_id = :b",
        b=board_id,
    )
    return partition, offset


def test_untouched_table_gives_no_finding(world: Pipeline) -> None:
    result = reconcile(world)
    assert failures(result) == {}, "\n".join(result.summary())
    assert result.passed
    counts = result.reconciliation.counts
    assert (counts["joined"], counts["pending"], counts["dead_lettered"]) == (11, 1, 1)


def test_deleted_row(world: Pipeline) -> None:
    execute(world.settings.database, "DELETE FROM board_detail WHERE board_id = 'b1'")
    assert failures(reconcile(world)) == {"missing_in_table": ["b1"]}


def test_altered_content(world: Pipeline) -> None:
    execute(world.settings.database, "UPDATE board_detail SET city = 'Busan' WHERE board_id = 'b2'")
    assert failures(reconcile(world)) == {"mismatched": ["b2"]}


def test_duplicated_row(world: Pipeline) -> None:
    execute(
        world.settings.database,
        "ALTER TABLE board_detail DROP CONSTRAINT board_detail_pkey",
        "INSERT INTO board_detail SELECT * FROM board_detail WHERE board_id = 'b3'",
    )
    assert failures(reconcile(world)) == {"duplicates": ["b3"]}


def test_forged_row_at_a_real_position(world: Pipeline) -> None:
    partition, offset = position(world, "b4")
    execute(
        world.settings.database,
        "INSERT INTO board_detail (board_id, member_id, detail_partition, detail_offset)"
        " VALUES ('forged', 1, :p, :o)",
        p=partition,
        o=offset,
    )
    assert failures(reconcile(world)) == {"extra_in_table": ["forged"]}


def test_forged_row_beyond_the_sinks_committed_range(world: Pipeline) -> None:
    """Invisible before: the table was read only below the sink's committed offsets."""
    execute(
        world.settings.database,
        "INSERT INTO board_detail SELECT 'forged2', member_id, nickname, city, phone, title, body,"
        " created_ts, created_at, modified_at, member_modified_at, board_partition, board_offset,"
        " member_partition, member_offset, detail_partition, 1000000000, loaded_at"
        " FROM board_detail WHERE board_id = 'b5'",
    )
    assert failures(reconcile(world)) == {"extra_in_table": ["forged2"]}


def test_row_claiming_the_next_offset(world: Pipeline) -> None:
    """A row whose detail_offset is moved by one names another board's record."""
    by_position = {
        (p, o): board_id
        for board_id, p, o in rows(
            world.settings.database,
            "SELECT board_id, detail_partition, detail_offset FROM board_detail",
        )
    }
    (_, offset), victim = next(
        (pos, b) for pos, b in sorted(by_position.items()) if (pos[0], pos[1] + 1) in by_position
    )
    execute(
        world.settings.database,
        "UPDATE board_detail SET detail_offset = :o WHERE board_id = :b",
        o=offset + 1,
        b=victim,
    )
    assert failures(reconcile(world)) == {"mismatched": [victim]}


def test_row_claiming_another_partition(world: Pipeline) -> None:
    """A row moved to another real partition, at an offset that exists there."""
    found = rows(
        world.settings.database,
        "SELECT board_id, detail_partition, detail_offset FROM board_detail",
    )
    ends: dict[int, int] = {}
    for _, p, o in found:
        ends[p] = max(ends.get(p, 0), o + 1)
    victim, other = next(
        (b, q) for b, p, o in sorted(found) for q in sorted(ends) if q != p and o < ends[q]
    )
    execute(
        world.settings.database,
        "UPDATE board_detail SET detail_partition = :q WHERE board_id = :b",
        q=other,
        b=victim,
    )
    assert failures(reconcile(world)) == {"mismatched": [victim]}


def test_row_claiming_a_position_that_does_not_exist(world: Pipeline) -> None:
    """Reported as extra (the row exists, the record it names does not), not as missing."""
    execute(
        world.settings.database,
        "UPDATE board_detail SET detail_offset = 1000000000 WHERE board_id = 'b6'",
    )
    assert failures(reconcile(world)) == {"extra_in_table": ["b6"]}


def test_row_claiming_the_position_at_the_topics_end(world: Pipeline) -> None:
    """The next record's position, which a live sink may load ahead of a run
    (tests/adversarial/test_live_sink.py), names no record yet: extra, not in transit."""
    partition, _ = position(world, "b6")
    admin = admin_client(world.settings)  # held: a collected client fails its futures
    wanted = TopicPartition(world.settings.board_detail_topic, partition)
    end = admin.list_offsets({wanted: OffsetSpec.latest()})[wanted].result().offset
    execute(
        world.settings.database,
        "UPDATE board_detail SET detail_offset = :o WHERE board_id = 'b6'",
        o=end,
    )
    assert failures(reconcile(world)) == {"extra_in_table": ["b6"]}


def test_text_moved_across_a_control_character(world: Pipeline) -> None:
    """``ctl`` has title 'a\\x01b' and body 'c': 'a' and 'b\\x01c' joined the same way."""
    execute(
        world.settings.database,
        "UPDATE board_detail SET title = 'a', body = :body WHERE board_id = 'ctl'",
        body="b\u0001c",
    )
    assert failures(reconcile(world)) == {"mismatched": ["ctl"]}


def test_empty_text_instead_of_null(world: Pipeline) -> None:
    execute(world.settings.database, "UPDATE board_detail SET phone = NULL WHERE board_id = 'b7'")
    execute(world.settings.database, "UPDATE board_detail SET body = '' WHERE board_id = 'b8'")
    assert failures(reconcile(world)) == {"mismatched": ["b7", "b8"]}


def test_provenance_altered(world: Pipeline) -> None:
    execute(
        world.settings.database,
        "UPDATE board_detail SET board_offset = board_offset + 1 WHERE board_id = 'b1'",
        "UPDATE board_detail SET member_offset = member_offset + 1 WHERE board_id = 'b2'",
        "UPDATE board_detail SET member_partition = member_partition + 1 WHERE board_id = 'b3'",
    )
    assert failures(reconcile(world)) == {"mismatched": ["b1", "b2", "b3"]}


def test_row_of_an_older_record(world: Pipeline) -> None:
    """``upd`` was posted twice; its row is put back to the first record, exactly."""
    older, newest = detail_records(world.settings, "upd")
    assert (older["title"], newest["title"]) == ("v1", "v2")
    load_row(world.settings, older)
    result = reconcile(world)
    assert failures(result) == {"stale_in_table": ["upd"]}, "\n".join(result.summary())


def test_number_stored_as_another_numeric_type(world: Pipeline) -> None:
    """created_ts as NUMERIC comes back as Decimal: reported, never coerced back to int."""
    execute(
        world.settings.database,
        "ALTER TABLE board_detail ALTER COLUMN created_ts TYPE numeric",
    )
    result = reconcile(world)
    found = failures(result)
    ids = sorted(r[0] for r in rows(world.settings.database, "SELECT board_id FROM board_detail"))
    assert set(found) == {"type_mismatch"}
    assert result.reconciliation.findings["type_mismatch"].count == len(ids) == 10
    assert [e.split(" ")[0] for e in found["type_mismatch"]] == ids
    assert all("created_ts=Decimal(" in e for e in found["type_mismatch"])


def test_text_in_an_integer_column(world: Pipeline) -> None:
    """Crashed the run before (ArrowInvalid, run left half-written)."""
    execute(
        world.settings.database,
        "ALTER TABLE board_detail ALTER COLUMN member_id TYPE text",
        "UPDATE board_detail SET member_id = 'abc' WHERE board_id = 'b4'",
    )
    result = reconcile(world)
    examples = failures(result)["type_mismatch"]
    assert set(failures(result)) == {"type_mismatch"}
    assert "b4 (member_id='abc')" in examples
    assert result.reconciliation.findings["type_mismatch"].count == 10  # every row is text now


def test_row_of_a_board_still_waiting(world: Pipeline) -> None:
    execute(
        world.settings.database,
        "INSERT INTO board_detail (board_id, member_id, detail_partition, detail_offset)"
        " VALUES ('waits', 99, 0, 0)",
    )
    assert failures(reconcile(world)) == {"extra_in_table": ["waits"]}


def test_several_kinds_at_once(world: Pipeline) -> None:
    execute(
        world.settings.database,
        "DELETE FROM board_detail WHERE board_id IN ('b1', 'b2')",
        "UPDATE board_detail SET title = 'x' WHERE board_id = 'b3'",
        "INSERT INTO board_detail (board_id, member_id, detail_partition, detail_offset)"
        " VALUES ('ghost', 1, 0, 999999)",
    )
    assert failures(reconcile(world)) == {
        "missing_in_table": ["b1", "b2"],
        "mismatched": ["b3"],
        "extra_in_table": ["ghost"],
    }


def test_rows_watched_a_slice_per_run_are_found_by_the_run_whose_slice_holds_them(
    world: Pipeline,
) -> None:
    """With ``reconcile_watch_rows`` below the table's size, each incremental run hashes one
    slice of 4 rows: the row with the last board id, altered, is no finding until the run
    whose slice holds it (the last of the round), which then agrees with a full run."""
    ids = [r[0] for r in rows(world.settings.database, "SELECT board_id FROM board_detail")]
    last = max(ids)
    execute(
        world.settings.database, f"UPDATE board_detail SET city = 'x' WHERE board_id = '{last}'"
    )
    whole = world.settings
    world.settings = whole.model_copy(update={"reconcile_watch_rows": 4})
    try:
        found = [failures(reconcile_as(world, INCREMENTAL)) for _ in range((len(ids) - 1) // 4)]
        incremental = reconcile_as(world, INCREMENTAL)
        full = reconcile_as(world, FULL)
    finally:
        world.settings = whole
    assert (len(ids), found) == (10, [{}, {}])
    assert failures(incremental) == {"mismatched": [last]}
    assert verdict(incremental) == verdict(full)
