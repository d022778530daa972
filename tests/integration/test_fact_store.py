"""The fact store against real SQLite and PostgreSQL: replacing the facts of some keys leaves
every other key's, and the running counts always equal a count of the stored facts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from sqlalchemy.engine import Engine

from boardstream import database
from boardstream.reconcile.incremental.affected import Keys
from tests.fixtures import sqlite_or_postgres_url
from tests.store import FACTS

SCHEMA = pa.schema(
    [
        ("kind", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("board_id", pa.string()),
    ]
)
FULL = [
    ("source", 0, 1, "b1"),
    ("read", 0, 1, "b1"),
    ("joined", 0, 1, "b1"),
    ("source", 0, 2, "b2"),
    ("read", 0, 2, "b2"),
    ("pending", 0, 2, "b2"),
    ("source", 1, 1, "b3"),
    ("not_yet_read", 1, 1, "b3"),
    ("expected_table_rows", None, None, "b1"),
    ("missing_in_table", None, None, "b1"),
    ("not_yet_loaded", None, None, "b2"),
]


def facts(rows: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA)


def counted(rows: list[tuple]) -> dict[tuple[str, int | None], int]:
    return dict(Counter((kind, partition) for kind, partition, _, _ in rows))


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    created = database.engine(sqlite_or_postgres_url(request, tmp_path))
    FACTS.create(created)
    with created.begin() as connection:
        every = Keys.of({(p, o) for _, p, o, _ in FULL if o is not None}, {"b1", "b2", "b3"})
        FACTS.replace(connection, every, facts(FULL))
    yield created
    created.dispose()


def test_a_full_replace_counts_every_fact(engine: Engine) -> None:
    with engine.connect() as connection:
        assert FACTS.counts(connection) == counted(FULL)
        assert FACTS.examples(connection, "source", None) == ["b1", "b2", "b3"]
        assert FACTS.examples(connection, "source", 2) == ["b1", "b2"]


def test_replacing_some_keys_keeps_the_others_and_moves_the_counts(engine: Engine) -> None:
    # b2's position got joined and b2 loaded; b3's position was read and joined.
    new = [
        ("source", 0, 2, "b2"),
        ("read", 0, 2, "b2"),
        ("joined", 0, 2, "b2"),
        ("expected_table_rows", None, None, "b2"),
        ("source", 1, 1, "b3"),
        ("read", 1, 1, "b3"),
        ("joined", 1, 1, "b3"),
    ]
    with engine.begin() as connection:
        delta = FACTS.replace(connection, Keys.of([(0, 2), (1, 1)], ["b2"]), facts(new))
    kept = [
        f for f in FULL if not ((f[1], f[2]) in {(0, 2), (1, 1)} or (f[3] == "b2" and f[1] is None))
    ]
    with engine.connect() as connection:
        assert FACTS.counts(connection) == counted(kept + new)
        assert FACTS.examples(connection, "joined", None) == ["b1", "b2", "b3"]
        assert FACTS.examples(connection, "pending", None) == []
        assert FACTS.examples(connection, "missing_in_table", None) == ["b1"]
    assert delta == Counter(
        {
            ("joined", 0): 1,
            ("joined", 1): 1,
            ("read", 1): 1,
            ("expected_table_rows", -1): 1,
            ("pending", 0): -1,
            ("not_yet_read", 1): -1,
            ("not_yet_loaded", -1): -1,
        }
    )


def test_a_board_key_leaves_the_position_facts_that_name_the_board(engine: Engine) -> None:
    with engine.begin() as connection:
        FACTS.replace(connection, Keys.of(boards=["b1"]), facts([]))
    with engine.connect() as connection:
        found = FACTS.counts(connection)
    assert ("missing_in_table", None) not in found and ("expected_table_rows", None) not in found
    assert found[("joined", 0)] == 1  # b1's position fact stays


def test_a_rolled_back_replace_changes_nothing(engine: Engine) -> None:
    with pytest.raises(RuntimeError), engine.begin() as connection:
        FACTS.replace(connection, Keys.of([(0, 1)]), facts([]))
        raise RuntimeError("the run failed after its checks")
    with engine.connect() as connection:
        assert FACTS.counts(connection) == counted(FULL)


def test_open_keys_are_those_with_a_fact_of_an_unsettled_kind(engine: Engine) -> None:
    settled = ("source", "read", "joined", "expected_table_rows")
    with engine.connect() as connection:
        found = FACTS.open_keys(connection, settled)
    # (0, 2) pending, (1, 1) not yet read; b1 missing in the table, b2 not yet loaded
    assert found == Keys.of([(0, 2), (1, 1)], ["b1", "b2"])
