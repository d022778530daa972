"""Tampering with a pipeline's table, for each shipped declaration (board_detail and orders):
every kind is found, with exactly the affected ids, and the untouched table gives no finding at
all. Each test changes the table of one shared pipeline; the ``world`` fixture puts it back
afterwards. The columns a test aims at are found from the declaration (tests/adversarial/
world.py), so one test is every pipeline's."""

from __future__ import annotations

from typing import Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec

from boardstream.kafka.clients import admin_client
from boardstream.reconcile.evidence.run_ledger import FULL, INCREMENTAL
from tests.adversarial.conftest import CONTROL
from tests.adversarial.world import (
    column,
    detail_records,
    execute,
    failures,
    free_texts,
    integer_column,
    load_row,
    reconcile,
    reconcile_as,
    rows,
    text_pair,
    verdict,
)
from tests.pipeline import Pipeline


class Table:
    """The world's table by the roles of its columns: its name, key, the stream's, the table
    row's and the joined record's positions (each a (partition, offset) pair of columns)."""

    def __init__(self, world: Pipeline) -> None:
        self.world = world
        self.name = world.table.table.name
        self.key = world.table.key
        self.stream, self.row, self.joined = (
            tuple(column(world, f"{side}.{p}") for p in ("ROWPARTITION", "ROWOFFSET"))
            for side in ("stream", "table", "joined")
        )

    def execute(self, *statements: str, **params: Any) -> None:
        execute(self.world.settings.database, *statements, **params)

    def rows(self, sql: str, **params: Any) -> list[Any]:
        return rows(self.world.settings.database, sql, **params)

    def ids(self) -> list[str]:
        return sorted(r[0] for r in self.rows(f"SELECT {self.key} FROM {self.name}"))

    def forge(self, record_id: str, like: str, **values: object) -> None:
        """A row ``record_id``, a copy of ``like``'s with ``values`` in place."""
        replaced = {self.key: record_id, **values}
        names = self.world.table.columns
        chosen = ", ".join(f":{c}" if c in replaced else c for c in names)
        self.execute(
            f"INSERT INTO {self.name} ({', '.join(names)})"
            f" SELECT {chosen} FROM {self.name} WHERE {self.key} = :like",
            **replaced,
            like=like,
        )

    def update(self, record_id: str, **values: object) -> None:
        assignments = ", ".join(f"{c} = :{c}" for c in values)
        self.execute(
            f"UPDATE {self.name} SET {assignments} WHERE {self.key} = :id", id=record_id, **values
        )

    def position(self, record_id: str) -> tuple[int, int]:
        partition, offset = self.joined
        ((p, o),) = self.rows(
            f"SELECT {partition}, {offset} FROM {self.name} WHERE {self.key} = :id", id=record_id
        )
        return p, o

    def positions(self) -> list[tuple[str, int, int]]:
        """(id, joined partition, joined offset) of every row."""
        partition, offset = self.joined
        return self.rows(f"SELECT {self.key}, {partition}, {offset} FROM {self.name}")


def test_untouched_table_gives_no_finding(world: Pipeline) -> None:
    result = reconcile(world)
    assert failures(result) == {}, "\n".join(result.summary())
    assert result.passed
    counts = result.reconciliation.counts
    assert (counts["joined"], counts["pending"], counts["dead_lettered"]) == (11, 1, 1)


def test_deleted_row(world: Pipeline) -> None:
    t = Table(world)
    t.execute(f"DELETE FROM {t.name} WHERE {t.key} = 'b1'")
    assert failures(reconcile(world)) == {"missing_in_table": ["b1"]}


def test_altered_content(world: Pipeline) -> None:
    Table(world).update("b2", **{free_texts(world)[0]: "tampered"})
    assert failures(reconcile(world)) == {"mismatched": ["b2"]}


def test_duplicated_row(world: Pipeline) -> None:
    t = Table(world)
    t.execute(
        f"ALTER TABLE {t.name} DROP CONSTRAINT {t.name}_pkey",
        f"INSERT INTO {t.name} SELECT * FROM {t.name} WHERE {t.key} = 'b3'",
    )
    assert failures(reconcile(world)) == {"duplicates": ["b3"]}


def test_forged_row_at_a_real_position(world: Pipeline) -> None:
    t = Table(world)
    t.forge("forged", like="b1", **dict(zip(t.joined, t.position("b4"), strict=True)))
    assert failures(reconcile(world)) == {"extra_in_table": ["forged"]}


def test_forged_row_beyond_the_sinks_committed_range(world: Pipeline) -> None:
    """Invisible before: the table was read only below the sink's committed offsets."""
    t = Table(world)
    t.forge("forged2", like="b5", **{t.joined[1]: 1_000_000_000})
    assert failures(reconcile(world)) == {"extra_in_table": ["forged2"]}


def test_row_claiming_the_next_offset(world: Pipeline) -> None:
    """A row whose joined offset is moved by one names another record."""
    t = Table(world)
    by_position = {(p, o): record_id for record_id, p, o in t.positions()}
    (_, offset), victim = next(
        (pos, b) for pos, b in sorted(by_position.items()) if (pos[0], pos[1] + 1) in by_position
    )
    t.update(victim, **{t.joined[1]: offset + 1})
    assert failures(reconcile(world)) == {"mismatched": [victim]}


def test_row_claiming_another_partition(world: Pipeline) -> None:
    """A row moved to another real partition, at an offset that exists there."""
    t = Table(world)
    found = t.positions()
    ends: dict[int, int] = {}
    for _, p, o in found:
        ends[p] = max(ends.get(p, 0), o + 1)
    victim, other = next(
        (b, q) for b, p, o in sorted(found) for q in sorted(ends) if q != p and o < ends[q]
    )
    t.update(victim, **{t.joined[0]: other})
    assert failures(reconcile(world)) == {"mismatched": [victim]}


def test_row_claiming_a_position_that_does_not_exist(world: Pipeline) -> None:
    """Reported as extra (the row exists, the record it names does not), not as missing."""
    t = Table(world)
    t.update("b6", **{t.joined[1]: 1_000_000_000})
    assert failures(reconcile(world)) == {"extra_in_table": ["b6"]}


def test_row_claiming_the_position_at_the_topics_end(world: Pipeline) -> None:
    """The next record's position, which a live sink may load ahead of a run
    (tests/adversarial/test_live_sink.py), names no record yet: extra, not in transit."""
    t = Table(world)
    partition, _ = t.position("b6")
    admin = admin_client(world.settings)  # held: a collected client fails its futures
    wanted = TopicPartition(world.topics.joined, partition)
    end = admin.list_offsets({wanted: OffsetSpec.latest()})[wanted].result().offset
    t.update("b6", **{t.joined[1]: end})
    assert failures(reconcile(world)) == {"extra_in_table": ["b6"]}


def test_text_moved_across_a_control_character(world: Pipeline) -> None:
    """``ctl``'s second column of the pair holds 'a\\x01b': its first column's text with
    '\\x01a' after it, and 'b', joined by the same character, read the same."""
    first, (side, field) = text_pair(world)
    t = Table(world)
    ((before,),) = t.rows(f"SELECT {first} FROM {t.name} WHERE {t.key} = 'ctl'")
    assert before is not None
    head, tail = CONTROL.split("\u0001")
    t.update("ctl", **{first: f"{before}\u0001{head}", column(world, f"{side}.{field}"): tail})
    assert failures(reconcile(world)) == {"mismatched": ["ctl"]}


def test_empty_text_instead_of_null(world: Pipeline) -> None:
    """A text set to NULL in one row and to '' in another, each of which held a text."""
    t = Table(world)
    text = free_texts(world)[0]
    held = t.rows(
        f"SELECT {t.key} FROM {t.name} WHERE {text} <> '' AND {t.key} LIKE 'b%' ORDER BY 1"
    )
    (nulled,), (emptied,) = held[:2]
    t.update(nulled, **{text: None})
    t.update(emptied, **{text: ""})
    assert failures(reconcile(world)) == {"mismatched": [nulled, emptied]}


def test_provenance_altered(world: Pipeline) -> None:
    t = Table(world)
    t.execute(
        f"UPDATE {t.name} SET {t.stream[1]} = {t.stream[1]} + 1 WHERE {t.key} = 'b1'",
        f"UPDATE {t.name} SET {t.row[1]} = {t.row[1]} + 1 WHERE {t.key} = 'b2'",
        f"UPDATE {t.name} SET {t.row[0]} = {t.row[0]} + 1 WHERE {t.key} = 'b3'",
    )
    assert failures(reconcile(world)) == {"mismatched": ["b1", "b2", "b3"]}


def test_row_of_an_older_record(world: Pipeline) -> None:
    """``upd`` was posted twice; its row is put back to the first record, exactly."""
    t = Table(world)
    older, newest = detail_records(world, "upd")
    assert older[t.stream[1]] < newest[t.stream[1]]
    load_row(world, older)
    result = reconcile(world)
    assert failures(result) == {"stale_in_table": ["upd"]}, "\n".join(result.summary())


def test_number_stored_as_another_numeric_type(world: Pipeline) -> None:
    """An integer column as NUMERIC comes back as Decimal: reported, never coerced back."""
    t = Table(world)
    number = integer_column(world)
    t.execute(f"ALTER TABLE {t.name} ALTER COLUMN {number} TYPE numeric")
    result = reconcile(world)
    found = failures(result)
    ids = t.ids()
    assert set(found) == {"type_mismatch"}
    assert result.reconciliation.findings["type_mismatch"].count == len(ids) == 10
    assert [e.split(" ")[0] for e in found["type_mismatch"]] == ids
    assert all(f"{number}=Decimal(" in e for e in found["type_mismatch"])


def test_text_in_an_integer_column(world: Pipeline) -> None:
    """Crashed the run before (ArrowInvalid, run left half-written)."""
    t = Table(world)
    number = integer_column(world)
    t.execute(f"ALTER TABLE {t.name} ALTER COLUMN {number} TYPE text")
    t.update("b4", **{number: "abc"})
    result = reconcile(world)
    examples = failures(result)["type_mismatch"]
    assert set(failures(result)) == {"type_mismatch"}
    assert f"b4 ({number}='abc')" in examples
    assert result.reconciliation.findings["type_mismatch"].count == 10  # every row is text now


def test_row_of_a_record_still_waiting(world: Pipeline) -> None:
    Table(world).forge("waits", like="b1")
    assert failures(reconcile(world)) == {"extra_in_table": ["waits"]}


def test_several_kinds_at_once(world: Pipeline) -> None:
    t = Table(world)
    t.execute(f"DELETE FROM {t.name} WHERE {t.key} IN ('b1', 'b2')")
    t.update("b3", **{free_texts(world)[0]: "x"})
    t.forge("ghost", like="b4", **{t.joined[1]: 999_999})
    assert failures(reconcile(world)) == {
        "missing_in_table": ["b1", "b2"],
        "mismatched": ["b3"],
        "extra_in_table": ["ghost"],
    }


def test_rows_watched_a_slice_per_run_are_found_by_the_run_whose_slice_holds_them(
    world: Pipeline,
) -> None:
    """With ``reconcile_watch_rows`` below the table's size, each incremental run hashes one
    slice of 4 rows: the row with the last id, altered, is no finding until the run whose
    slice holds it (the last of the round), which then agrees with a full run."""
    t = Table(world)
    ids = t.ids()
    last = max(ids)
    t.update(last, **{free_texts(world)[0]: "x"})
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
