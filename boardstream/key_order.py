"""SQLite tables stored in their key's order (``WITHOUT ROWID``), and the one-off move of a table
made with a rowid into that order.

A rowid table keeps its rows in insertion order and its key in an index beside them, so a
range of keys inserted in random order (board ids) costs one page read per row. Stored in key
order, the same range is neighbouring pages: at 4.47 M rows, a 500,000-row slice's bucket
digests took 1.8 s against 4.0 s (docs/BENCHMARKS.md).

A database made before a table was declared so keeps the rowid one: :func:`move_into_key_order`
copies it over, once, in one transaction, but only a table laid out exactly as declared bar the
rowid (same columns, types, defaults, key and indexes; no trigger or view naming it), since the
copy then changes no stored value. Anything else (a table altered by hand, a user's view) is
left as it is, with a log line saying why: it still works, only its ranges cost more.
"""

from __future__ import annotations

import logging
import time

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

log = logging.getLogger(__name__)

Layout = tuple[tuple[tuple[object, ...], ...], tuple[tuple[object, ...], ...]]


def move_into_key_order(engine: Engine, table: sa.Table) -> bool:
    """Move ``table``'s rows from a rowid table of the same layout into the key-ordered table
    ``table`` declares (SQLite; other databases and tables already in order are left alone).
    True when it moved them."""
    if engine.dialect.name != "sqlite" or table.dialect_options["sqlite"]["with_rowid"]:
        return False
    with engine.connect() as connection:
        if not _has_rowid(connection, table.name):  # the usual case: no write lock taken
            return False
    with engine.connect() as connection:
        # pysqlite begins a transaction only before DML, so its implicit one would leave the
        # rename and the create below committed on their own: one explicit transaction, taken
        # for writing at once (a concurrent mover waits here, then finds nothing to move).
        # A writer holding the database past the driver's busy timeout, like any failure here,
        # leaves the table as it was, for the next start to try again.
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
            moved = _move(connection, table)
        except sa.exc.DBAPIError as error:
            connection.rollback()
            log.warning("%s: left in rowid order, nothing changed: %s", table.name, error.orig)
            return False
        connection.commit()
    return moved


def _move(connection: Connection, table: sa.Table) -> bool:
    if not _has_rowid(connection, table.name):
        return False
    found, declared = _layout(connection, table.name), _rowid_layout(table)
    if found != declared:
        log.info(
            "%s: left in rowid order: its columns, key or indexes are not the ones declared",
            table.name,
        )
        return False
    dependents = connection.exec_driver_sql(
        "SELECT type || ' ' || name FROM sqlite_master WHERE (type = 'trigger' AND tbl_name = ?)"
        " OR (type = 'view' AND sql LIKE ?)",
        (table.name, f"%{table.name}%"),
    ).scalars()
    if named := sorted(dependents):
        log.info("%s: left in rowid order: %s name it", table.name, ", ".join(named))
        return False
    rows = connection.exec_driver_sql(f'SELECT count(*) FROM "{table.name}"').scalar_one()
    log.info("%s: moving its %d rows into key order (once)", table.name, rows)
    began = time.monotonic()
    old = f"_{table.name}_rowid"
    for index in table.indexes:
        index.drop(connection)
    connection.exec_driver_sql(f'ALTER TABLE "{table.name}" RENAME TO "{old}"')
    table.create(connection)
    key = ", ".join(f'"{column.name}"' for column in table.primary_key.columns)
    connection.exec_driver_sql(f'INSERT INTO "{table.name}" SELECT * FROM "{old}" ORDER BY {key}')
    connection.exec_driver_sql(f'DROP TABLE "{old}"')
    log.info("%s: %d rows in key order (%.1f s)", table.name, rows, time.monotonic() - began)
    return True


def _has_rowid(connection: Connection, name: str) -> bool:
    ddl = connection.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).scalar()
    return ddl is not None and "WITHOUT ROWID" not in ddl.upper()


def _layout(connection: Connection, name: str) -> Layout:
    """The table's columns (name, type, NOT NULL, default, key position) and its indexes
    (name, unique, origin, partial, their columns), as SQLite reports them."""
    columns = connection.exec_driver_sql(f'PRAGMA table_info("{name}")').all()
    indexes = []
    for _seq, index, unique, origin, partial in connection.exec_driver_sql(
        f'PRAGMA index_list("{name}")'
    ):
        keys = connection.exec_driver_sql(f'PRAGMA index_info("{index}")').all()
        indexes.append((index, unique, origin, partial, tuple(tuple(k) for k in keys)))
    return tuple(tuple(c) for c in columns), tuple(sorted(indexes))


def with_rowid(table: sa.Table) -> sa.Table:
    """``table`` as it was declared before it was stored in key order (in a metadata of its own):
    what an earlier version made, for the layout check and for tests and benches to make."""
    copy = table.to_metadata(sa.MetaData())
    copy.dialect_options["sqlite"]["with_rowid"] = True
    return copy


def _rowid_layout(table: sa.Table) -> Layout:
    """``table``'s layout with a rowid, as made in a scratch in-memory database."""
    copy = with_rowid(table)
    scratch = sa.create_engine("sqlite://")
    try:
        with scratch.begin() as connection:
            copy.create(connection)
            return _layout(connection, table.name)
    finally:
        scratch.dispose()
