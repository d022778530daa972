"""Old rows still watched (#22): the sink table as each run last checked it, per record id (a
board) and per bucket, so an incremental run finds the boards whose rows changed since without
re-reading a topic.

After a run checks some boards it remembers their rows' digests (:func:`remember`; a full run
all of them, staged ahead of its transaction, :func:`stage_all` and :func:`remember_all`) and
moves its running per-bucket totals. The next run has the database compute the per-bucket
digests of a slice of the table (one ``GROUP BY``, :func:`table_buckets.bucket_digests`;
:func:`look`) and re-checks every board of the buckets that differ (:func:`suspects`): within
them, the boards whose row digest moved (altered, deleted, added), and every board of a bucket
holding more rows than boards (a duplicated row leaves its board's digest as it was).

The slice: a table of at most ``rows`` rows (``Settings.reconcile_watch_rows``) is looked at
whole by every run. A larger one is looked at in consecutive ranges of board ids of ``rows``
rows each, the next run starting where the last one ended (:func:`advance`), then over from the
first id: a run's cost stays that of ``rows`` rows whatever the table's size, and a row changed
anywhere is found within one round of slices (ceil(table rows / ``rows``) runs; a full run
looks at everything). Rows without a board id are in every slice.

What it cannot see: a change that leaves a bucket's row count and 64-bit digest sum as they were
(a checksum, not a seal); a write between a run's read of the rows and its remembering them;
until the round reaches it, a change outside the run's slice.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from boardstream import database, key_order, staging
from boardstream.pipelines.names import store_table
from boardstream.reconcile.checks.table_checks import NULL_BOARD_ID
from boardstream.reconcile.incremental import table_buckets
from boardstream.reconcile.incremental.table_buckets import (
    EMPTY,
    WHOLE,
    BucketDigest,
    IdRange,
    RowDigest,
)
from boardstream.sink.table import SinkTable

log = logging.getLogger(__name__)


def _tables(metadata: sa.MetaData, pipeline: str) -> tuple[sa.Table, ...]:
    """A pipeline's remembered rows, bucket totals, table schema and slice."""

    def named(part: str) -> str:
        return store_table(pipeline, part)

    # Each record id's rows as last checked: their count and digest sum (two halves, as the
    # database sums them), in the id's bucket. Stored in id order on SQLite (no rowid), so a
    # slice's remembered rows (a range of ids) are neighbours on disk, not one page read each.
    row = sa.Table(
        named("reconcile_row"),
        metadata,
        sa.Column("board_id", sa.Text, primary_key=True),
        sa.Column("bucket", sa.Integer, nullable=False, index=True),
        sa.Column("rows", sa.BigInteger, nullable=False),
        sa.Column("high", sa.BigInteger, nullable=False),
        sa.Column("low", sa.BigInteger, nullable=False),
        sqlite_with_rowid=False,
    )
    # The same, summed per bucket: what the table's bucket digests should be.
    bucket = sa.Table(
        named("reconcile_bucket"),
        metadata,
        sa.Column("bucket", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("rows", sa.BigInteger, nullable=False),
        sa.Column("high", sa.BigInteger, nullable=False),
        sa.Column("low", sa.BigInteger, nullable=False),
    )
    # The table's columns and their types as last checked: a change of type leaves the rows'
    # text (and so their digests) as it was, e.g. bigint to numeric, yet is a finding
    # (type_mismatch).
    schema = sa.Table(
        named("reconcile_table_schema"),
        metadata,
        sa.Column("signature", sa.Text, nullable=False),
    )
    # Where the last run's slice of the table ended (its last id; no row: the next slice
    # starts at the first id).
    table_slice = sa.Table(
        named("reconcile_table_slice"),
        metadata,
        sa.Column("through", sa.Text, nullable=False),
    )
    return row, bucket, schema, table_slice


_HALF = 2**32
# The remembered rows' id column, and its name for rows without an id (IdRange.where's).
_ID = "board_id"
_MISSING = f"{_ID} = :null_board_id"


@dataclass(frozen=True)
class Look:
    """A slice of the table (a range of board ids) and its bucket digests, as one run saw it."""

    table: str  # the sink table's name
    within: IdRange
    digests: dict[int, BucketDigest]

    @property
    def rows(self) -> int:
        """How many rows the slice held when it was looked at."""
        return sum(digest.rows for digest in self.digests.values())

    def as_json(self) -> dict[str, object]:
        """The slice as a run's record keeps it (``ledger.describe_table_slice``)."""
        return slice_record(self.table, self.within, self.rows)


def slice_record(table: str, within: IdRange, rows: int) -> dict[str, object]:
    """A slice of ``rows`` rows of ``table`` as a run's record keeps it (its ``table_slice``)."""
    return {"table": table, "after": within.after, "through": within.through, "rows": rows}


@dataclass(frozen=True, eq=False)
class TableWatch:
    """What one pipeline's runs remember of its sink table (:meth:`TableWatch.of`), in tables
    named after the pipeline."""

    pipeline: str
    metadata: sa.MetaData
    row_table: sa.Table
    bucket_table: sa.Table
    schema_table: sa.Table
    slice_table: sa.Table

    @staticmethod
    @cache
    def of(pipeline: str) -> TableWatch:
        metadata = sa.MetaData()
        return TableWatch(pipeline, metadata, *_tables(metadata, pipeline))

    def create(self, engine: Engine) -> None:
        """Create the tables; on SQLite, move remembered rows kept in a rowid table (made before
        it was stored in id order) into the id ordered one."""
        key_order.move_into_key_order(engine, self.row_table)
        self.metadata.create_all(engine)

    def look(self, bind: Engine | Connection, table: SinkTable, rows: int) -> Look:
        """The next slice of at most ``rows`` rows of ``table`` after where the last run's
        ended (the whole table when it holds no more), and its bucket digests computed by the
        database."""
        with table_buckets.connected(bind) as connection:
            after = connection.execute(sa.select(self.slice_table.c.through)).scalar()
            through = table_buckets.id_after(connection, table, after, rows)
            if (
                through is not None
                and table_buckets.id_after(connection, table, through, 1) is None
            ):
                through = None  # the slice ends with the last id: it runs to the end
        within = WHOLE if after is None and through is None else IdRange(after, through)
        digests = table_buckets.bucket_digests(bind, table, within=within)
        return Look(table.table.name, within, digests)

    def advance(self, connection: Connection, within: IdRange) -> None:
        """The next run's slice starts after ``within``'s, or over from the first id when it ran
        to the end. In the caller's transaction, beside the rows it remembers."""
        connection.execute(self.slice_table.delete())
        if within.through is not None:
            connection.execute(self.slice_table.insert().values(through=within.through))

    def suspects(
        self,
        connection: Connection,
        table: SinkTable,
        known: Iterable[str] = (),
        seen: Look | None = None,
    ) -> set[str]:
        """The ids whose rows changed since they were last checked: in the buckets whose digests
        differ from the remembered ones, each id whose row digest differs, is new or is gone, and
        every id of such a bucket that holds more rows than ids (a row without an id counts as
        :data:`NULL_BOARD_ID`). Every id when the table's column types changed.

        ``known``: ids the run re-checks anyway (new records of them were loaded): the buckets'
        expected digests are moved by their rows' change first, so a bucket differs only for
        what nothing explains, and 1 % new ids do not drill into most buckets.

        ``seen``: the slice the run looks at and its bucket digests (:meth:`look`), when the
        caller took them already, on a connection of its own while it did other work; default:
        the whole table, now."""
        name = table.table.name
        remembered_schema = connection.execute(sa.select(self.schema_table.c.signature)).scalar()
        if remembered_schema != _signature(connection, table):
            r = self.row_table.c
            every = set(connection.execute(sa.select(r.board_id)).scalars())
            every |= {b or NULL_BOARD_ID for b in table_buckets.every_row(connection, table)}
            log.info("%s: its columns' types changed; all %d ids re-checked", name, len(every))
            return every
        if seen is None:
            seen = Look(name, WHOLE, table_buckets.bucket_digests(connection, table))
        within, actual = seen.within, seen.digests
        expected = self._expected(connection, within)
        known = sorted(set(known))
        for row in self._remembered(connection, known, within).values():
            expected[row.bucket] = expected.get(row.bucket, EMPTY).minus(row.digest)
        for row in table_buckets.row_digests(connection, table, known, within=within).values():
            expected[row.bucket] = expected.get(row.bucket, EMPTY).plus(row.digest)
        differ = table_buckets.differing_buckets(expected, actual)
        if not differ:
            return set()
        condition, params = within.where(_MISSING, _ID)
        remembered = {
            board_id: RowDigest(bucket, _HALF * high + low)
            for board_id, bucket, high, low in connection.execute(
                sa.text(
                    f"SELECT board_id, bucket, high, low FROM {self.row_table.name} "
                    f"WHERE bucket IN :differ AND {condition}"
                ).bindparams(sa.bindparam("differ", expanding=True)),
                {"differ": differ, "null_board_id": NULL_BOARD_ID, **params},
            )
        }
        present = {
            NULL_BOARD_ID if board_id is None else board_id: row
            for board_id, row in table_buckets.rows_in_buckets(
                connection, table, differ, within=within
            ).items()
        }
        changed = set(table_buckets.differing_rows(remembered, present))
        # A bucket holding more rows than boards has a duplicate (or rows without a board id),
        # whose board's own digest may be unchanged: all of its boards.
        boards_in: dict[int, set[str]] = {}
        for board_id, row in [*remembered.items(), *present.items()]:
            boards_in.setdefault(row.bucket, set()).add(board_id)
        present_per_bucket: dict[int, int] = {}
        for row in present.values():
            present_per_bucket[row.bucket] = present_per_bucket.get(row.bucket, 0) + 1
        for bucket in differ:
            if actual.get(bucket, EMPTY).rows != present_per_bucket.get(bucket, 0):
                changed |= boards_in.get(bucket, set())
        log.info(
            "%s: %d of %d buckets differ from the last checks (%s); %d ids re-checked",
            name,
            len(differ),
            table_buckets.DEFAULT_BUCKETS,
            "the whole table"
            if within.whole
            else f"ids above {within.after!r} through {within.through!r}",
            len(changed),
        )
        return changed

    def _expected(self, connection: Connection, within: IdRange) -> dict[int, BucketDigest]:
        """The remembered bucket digests of the rows ``within`` the slice: the running totals for
        the whole table, summed from the remembered rows of a range. The range and the row
        without an id are two selects: with the two conditions joined by OR, SQLite walked
        every remembered row through the bucket index (for the GROUP BY) when the range had an
        open end."""
        if within.whole:
            b = self.bucket_table.c
            rows = connection.execute(sa.select(b.bucket, b.rows, b.high, b.low))
        else:
            condition, params = within.where(None, _ID)
            columns = f"SELECT bucket, rows, high, low FROM {self.row_table.name}"
            rows = connection.execute(
                sa.text(
                    "SELECT bucket, sum(rows), sum(high), sum(low) FROM "
                    f"({columns} WHERE {_MISSING} UNION ALL {columns} "
                    f"WHERE {condition} AND NOT {_MISSING}) AS r GROUP BY bucket"
                ),
                {"null_board_id": NULL_BOARD_ID, **params},
            )
        return {
            bucket: BucketDigest(int(n), _HALF * int(high) + int(low))
            for bucket, n, high, low in rows
        }

    def remember(self, connection: Connection, table: SinkTable, board_ids: Iterable[str]) -> None:
        """The rows of ``board_ids`` as ``table`` holds them now, in place of what was remembered
        of them; the bucket totals moved by the difference. In the caller's transaction."""
        wanted = sorted(set(board_ids))
        self._remember_schema(connection, table)
        now = table_buckets.row_digests(connection, table, wanted)
        r = self.row_table.c
        delta: dict[int, list[int]] = {}
        for chunk in database.chunks(wanted):
            old = connection.execute(
                sa.select(r.bucket, r.rows, r.high, r.low).where(r.board_id.in_(chunk))
            ).all()
            for bucket, rows, high, low in old:
                _add(delta, bucket, -rows, -high, -low)
            connection.execute(self.row_table.delete().where(r.board_id.in_(chunk)))
        rows = [_row(board_id, digest) for board_id, digest in now.items()]
        for row in rows:
            _add(delta, row["bucket"], row["rows"], row["high"], row["low"])
        if rows:
            connection.execute(self.row_table.insert(), rows)
        moved = [
            {"bucket": bucket, "rows": n, "high": high, "low": low}
            for bucket, (n, high, low) in sorted(delta.items())
            if n or high or low
        ]
        if moved:
            statement = database.upsert_insert(
                connection.dialect, self.bucket_table, "the table watch"
            )
            excluded = statement.excluded
            b = self.bucket_table.c
            statement = statement.on_conflict_do_update(
                index_elements=[b.bucket],
                set_={
                    "rows": b.rows + excluded.rows,
                    "high": b.high + excluded.high,
                    "low": b.low + excluded.low,
                },
            )
            connection.execute(statement, moved)

    def stage_all(self, engine: Engine, table: SinkTable) -> sa.Table:
        """Every row as the table holds it now, staged ahead of a full run's transaction
        (:mod:`boardstream.staging`) for :func:`remember_all`: read and hashed before it, not while
        it holds SQLite's write lock (which also narrows the window in which a write between the
        run's read of the rows and their remembering goes unseen)."""
        rows = sorted(
            (
                _row(board_id, digest)
                for board_id, digest in table_buckets.every_row(engine, table).items()
            ),
            key=lambda row: row["board_id"],
        )
        schema = pa.schema(
            [("board_id", pa.string())]
            + [(c, pa.int64()) for c in ("bucket", "rows", "high", "low")]
        )
        staged = staging.stage(engine, self.row_table, pa.Table.from_pylist(rows, schema))
        log.info("%s: %d ids' rows staged", table.table.name, len(rows))
        return staged

    def remember_all(self, connection: Connection, table: SinkTable, staged: sa.Table) -> None:
        """Every row of ``table`` as :func:`stage_all` read it, in place of everything remembered:
        a full run's. In the caller's transaction."""
        connection.execute(self.bucket_table.delete())
        self._remember_schema(connection, table)
        staging.move_in(connection, staged, self.row_table, replace=True)
        r = self.row_table.c
        connection.execute(
            self.bucket_table.insert().from_select(
                ["bucket", "rows", "high", "low"],
                sa.select(
                    r.bucket, sa.func.sum(r.rows), sa.func.sum(r.high), sa.func.sum(r.low)
                ).group_by(r.bucket),
            )
        )

    def _remembered(
        self, connection: Connection, board_ids: list[str], within: IdRange = WHOLE
    ) -> dict[str, RowDigest]:
        condition, params = within.where(_MISSING, _ID)
        query = sa.text(
            f"SELECT board_id, bucket, high, low FROM {self.row_table.name} "
            f"WHERE board_id IN :ids AND {condition}"
        ).bindparams(sa.bindparam("ids", expanding=True))
        found: dict[str, RowDigest] = {}
        for chunk in database.chunks(board_ids):
            rows = connection.execute(
                query, {"ids": chunk, "null_board_id": NULL_BOARD_ID, **params}
            )
            for board_id, bucket, high, low in rows:
                found[board_id] = RowDigest(bucket, _HALF * high + low)
        return found

    def _remember_schema(self, connection: Connection, table: SinkTable) -> None:
        connection.execute(self.schema_table.delete())
        signature = _signature(connection, table)
        connection.execute(self.schema_table.insert().values(signature=signature))


def _signature(connection: Connection, table: SinkTable) -> str:
    """``table``'s columns and their types, as the database describes them."""
    columns = sa.inspect(connection).get_columns(table.table.name)
    return json.dumps([[c["name"], str(c["type"])] for c in columns])


def _row(board_id: str | None, digest: RowDigest) -> dict[str, int | str]:
    """A board's row, split as the database sums digests (halves below 2**32 each). Duplicate
    rows of one board are one digest here (:func:`table_buckets.row_digests` keys by board),
    which :func:`suspects` allows for by re-checking whole buckets."""
    return {
        "board_id": NULL_BOARD_ID if board_id is None else board_id,
        "bucket": digest.bucket,
        "rows": 1,
        "high": digest.digest >> 32,
        "low": digest.digest & (_HALF - 1),
    }


def _add(delta: dict[int, list[int]], bucket: int, rows: int, high: int, low: int) -> None:
    totals = delta.setdefault(bucket, [0, 0, 0])
    totals[0] += rows
    totals[1] += high
    totals[2] += low
