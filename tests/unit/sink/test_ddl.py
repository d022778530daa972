"""The sink table's DDL (boardstream/sink/ddl.py). ``board_detail``'s is pinned as it was
written by hand before it was derived from its declaration: a database made by any earlier
version must be the table this one declares, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.schema import CreateIndex, CreateTable

from boardstream.sink.table import board_detail

BOARD_DETAIL_COLUMNS = (
    "\tboard_id VARCHAR(64) NOT NULL, \n"
    "\tmember_id BIGINT NOT NULL, \n"
    "\tnickname TEXT, \n"
    "\tcity TEXT, \n"
    "\tphone TEXT, \n"
    "\ttitle TEXT, \n"
    "\tbody TEXT, \n"
    "\tcreated_ts BIGINT, \n"
    "\tcreated_at TEXT, \n"
    "\tmodified_at TEXT, \n"
    "\tmember_modified_at TEXT, \n"
    "\tboard_partition INTEGER, \n"
    "\tboard_offset BIGINT, \n"
    "\tmember_partition INTEGER, \n"
    "\tmember_offset BIGINT, \n"
    "\tdetail_partition INTEGER NOT NULL, \n"
    "\tdetail_offset BIGINT NOT NULL, \n"
)
BOARD_DETAIL_INDEX = "CREATE INDEX ix_board_detail_member_id ON board_detail (member_id)"
BOARD_DETAIL_DDL = {
    "sqlite": (
        "\nCREATE TABLE board_detail (\n"
        + BOARD_DETAIL_COLUMNS
        + "\tloaded_at DATETIME DEFAULT CURRENT_TIMESTAMP, \n"
        "\tPRIMARY KEY (board_id)\n"
        ")\n"
        " WITHOUT ROWID\n\n",
        BOARD_DETAIL_INDEX,
    ),
    "postgresql": (
        "\nCREATE TABLE board_detail (\n"
        + BOARD_DETAIL_COLUMNS
        + "\tloaded_at TIMESTAMP WITH TIME ZONE DEFAULT now(), \n"
        "\tPRIMARY KEY (board_id)\n"
        ")\n\n",
        BOARD_DETAIL_INDEX,
    ),
}
DIALECTS = {"sqlite": sqlite.dialect(), "postgresql": postgresql.dialect()}


def compiled(table: sa.Table, dialect: str) -> tuple[str, ...]:
    """``CREATE TABLE`` and each ``CREATE INDEX`` of ``table``, as ``dialect`` writes them."""
    indexes = sorted(table.indexes, key=lambda index: str(index.name))
    return tuple(
        str(statement.compile(dialect=DIALECTS[dialect]))
        for statement in (CreateTable(table), *(CreateIndex(index) for index in indexes))
    )


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_board_detail_is_the_table_written_by_hand_before(dialect: str) -> None:
    assert compiled(board_detail, dialect) == BOARD_DETAIL_DDL[dialect]
