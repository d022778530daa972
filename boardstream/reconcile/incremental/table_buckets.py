"""A sink table's per-bucket digests, computed by the database (issue #22).

An incremental reconciliation verifies each row once, against the record it names, and keeps a
running digest per bucket of the rows it verified. Tampering with a row verified long ago is then
found without re-reading any topic: the table's per-bucket digests (one query in the database,
:func:`bucket_digests`) are compared with the running ones (:func:`differing_buckets`),
and only the buckets that differ are drilled into (:func:`rows_in_buckets`).

Definitions (per dialect; digests of one database are comparable with that database's only):

- **canonical row**: every stored column but ``loaded_at`` (:attr:`SinkTable.columns`, in order) as
  one JSON array: strings quoted and escaped, numbers bare, NULL as ``null``. Moving text across
  columns, NULL against ``''`` or ``'null'``, 1 against ``'1'`` never give the same text.
  PostgreSQL: ``json_build_array(...)::text``; SQLite: ``json_array(...)``, a BLOB (SQLite stores
  whatever it is given) as ``["blob", hex]`` instead of an error (tested for only when the
  table holds one: :func:`_blob_tagged_if_needed`).
- **row digest**: the first 64 bits of SHA-256 of the canonical row (UTF-8), as an unsigned
  integer. PostgreSQL hashes natively; SQLite has no hash function, so one is registered on the
  query's connection (:mod:`.sqlite_digests`). A sum of digests is a checksum, not a
  seal: it finds accidental or careless changes, not a forger who knows the scheme (who could
  as well write the ledger).
- **bucket**: the first 32 bits of SHA-256 of the row's key (:attr:`SinkTable.key`, the stream
  record's id, UTF-8), unsigned, modulo the bucket count: a record's row stays in its bucket
  whatever its content, and :func:`bucket_of` gives the same bucket in Python and in either
  database.
- **bucket digest**: its row count and the exact sum of its rows' digests. PostgreSQL sums the
  digests' two 32-bit halves apart, each below 2**32 per row, so a bucket of even 2**31 rows
  cannot overflow a 64-bit SUM; Python recombines them (``2**32 * high + low``). SQLite folds
  the rows into their buckets in one registered aggregate, with Python's exact integers. 64
  bits rather than 32: a change that leaves a bucket's sum equal then has a chance of 2**-64,
  not 2**-32, for one more integer SUM per bucket.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from boardstream import database
from boardstream.errors import BoardstreamError
from boardstream.reconcile.incremental import sqlite_digests
from boardstream.reconcile.incremental.sqlite_digests import MASK_64, NULL_BUCKET
from boardstream.sink.table import SinkTable

logger = logging.getLogger(__name__)

DEFAULT_BUCKETS = 4096
ID_CHUNK = database.IN_LIST  # board ids per key lookup
_HALF = 2**32
_JSON_BLOB = "JSON cannot hold BLOB values"  # SQLite's refusal of a BLOB in json_array()
T = TypeVar("T")


@dataclass(frozen=True)
class BucketDigest:
    """A bucket's row count and the exact sum of its rows' 64-bit digests."""

    rows: int
    digest_sum: int

    def plus(self, digest: int) -> BucketDigest:
        """With one more row of ``digest``: how a run adds a newly verified row."""
        return BucketDigest(self.rows + 1, self.digest_sum + digest)

    def minus(self, digest: int) -> BucketDigest:
        """Without a row of ``digest``: how a run drops a row it verified before (a board whose
        newer record replaced it)."""
        return BucketDigest(self.rows - 1, self.digest_sum - digest)


EMPTY = BucketDigest(0, 0)


@dataclass(frozen=True)
class IdRange:
    """The rows whose key (the stream record's id) is above ``after`` and at most ``through``
    (None: unbounded on that side), and the rows without one: a slice of the table that the
    primary key's index reaches without a scan of the rest, ordered as the database orders the
    ids."""

    after: str | None = None
    through: str | None = None

    @property
    def whole(self) -> bool:
        return self.after is None and self.through is None

    def where(self, missing: str | None, key: str) -> tuple[str, dict[str, str]]:
        """The SQL condition on the column ``key`` and its parameters; ``missing`` is how a row
        without an id is told (a ledger stores one under a name of its own), None where no such
        row can be."""
        bounds, params = [], {}
        if self.after is not None:
            bounds.append(f"{key} > :range_after")
            params["range_after"] = self.after
        if self.through is not None:
            bounds.append(f"{key} <= :range_through")
            params["range_through"] = self.through
        if not bounds:
            return "1 = 1", params
        condition = f"({' AND '.join(bounds)})"
        return (condition if missing is None else f"({missing} OR {condition})"), params


WHOLE = IdRange()


@dataclass(frozen=True)
class RowDigest:
    """A row's bucket (from its board id) and its 64-bit digest (from every stored column)."""

    bucket: int
    digest: int


def bucket_of(record_id: str, buckets: int = DEFAULT_BUCKETS) -> int:
    """The bucket of ``record_id``, as both databases compute it."""
    return sqlite_digests.bucket_of_bytes(record_id.encode("utf-8"), buckets)


def totals(rows: Iterable[RowDigest]) -> dict[int, BucketDigest]:
    """Row digests folded into per-bucket digests: what a ledger's running totals are."""
    result: dict[int, BucketDigest] = {}
    for row in rows:
        result[row.bucket] = result.get(row.bucket, EMPTY).plus(row.digest)
    return result


def differing_buckets(
    expected: Mapping[int, BucketDigest], actual: Mapping[int, BucketDigest]
) -> list[int]:
    """The buckets whose digests differ, in order; a bucket on one side only differs unless it
    is empty (a bucket whose rows all left is no different from one never filled)."""
    return sorted(
        bucket
        for bucket in expected.keys() | actual.keys()
        if expected.get(bucket, EMPTY) != actual.get(bucket, EMPTY)
    )


def differing_rows(expected: Mapping[str, RowDigest], actual: Mapping[str, RowDigest]) -> list[str]:
    """The board ids, in order, whose rows differ: changed, missing or not expected. The last
    step of a drill-down, given what the drilled buckets' rows should be."""
    return sorted(
        record_id
        for record_id in expected.keys() | actual.keys()
        if expected.get(record_id) != actual.get(record_id)
    )


def bucket_digests(
    engine: Engine | Connection,
    table: SinkTable,
    buckets: int = DEFAULT_BUCKETS,
    within: IdRange = WHOLE,
) -> dict[int, BucketDigest]:
    """Every non-empty bucket's digest, from one query over ``table``'s rows ``within`` a range
    of ids (the whole table by default): the database reads and hashes those rows, and
    only one small row per bucket crosses the wire. PostgreSQL groups them (``GROUP BY``);
    SQLite folds each row into its bucket in one registered aggregate (one Python call a row
    instead of a bucket call, a digest call and a sort); given an Engine (a connection of its
    own, no caller's transaction to share) and a database file, in a process of its own."""
    _check_buckets(buckets)
    with connected(engine) as connection:
        dialect = _prepare(connection)
        named = _Named.of(connection, table)
        condition, params = _where(connection, named, within)
        if dialect == "sqlite":
            apart = _file_of(engine)
            result = _sqlite_bucket_digests(connection, named, buckets, condition, params, apart)
        else:
            rows = connection.execute(
                sa.text(
                    "SELECT bucket, count(*), sum((digest >> 32) & 4294967295), "
                    f"sum(digest & 4294967295) FROM ("
                    f"{_digests_select(dialect, named, buckets, where=condition)}) AS d "
                    "GROUP BY bucket"
                ),
                params,
            )
            result = {
                int(bucket): BucketDigest(int(count), _HALF * int(high) + int(low))
                for bucket, count, high, low in rows
            }
    logger.debug("%s: %d buckets of %d hold rows", table.table.name, len(result), buckets)
    return result


def _sqlite_bucket_digests(
    connection: Connection,
    named: _Named,
    buckets: int,
    condition: str,
    params: dict[str, str],
    apart: str | None,
) -> dict[int, BucketDigest]:
    """The rows folded on ``connection``, or, given ``apart`` (the database file), in a process
    of its own (:func:`sqlite_digests.fold_apart`), whose registered hash does not wait for
    this interpreter's lock."""

    def fold(tagged: bool) -> str | None:
        canonical = _canonical_sql("sqlite", named.columns, tagged)
        query = (
            f"SELECT {sqlite_digests.BUCKET_DIGESTS}(CAST({named.key} AS BLOB), "
            f"CAST({canonical} AS BLOB)) FROM {named.table} WHERE {condition}"
        )
        if apart is not None:
            return sqlite_digests.fold_apart(apart, query, params, buckets)
        return sqlite_digests.fold(connection.connection.dbapi_connection, query, params, buckets)

    folded = _blob_tagged_if_needed(fold)
    if folded is None:  # no row: SQLite finalizes no aggregate
        return {}
    return {
        int(bucket): BucketDigest(int(rows), int(digest_sum))
        for bucket, rows, digest_sum in json.loads(folded)
    }


def _file_of(bind: Engine | Connection) -> str | None:
    """The SQLite database file an Engine opens, for a process of its own to read; None for a
    Connection (the caller's transaction, which no other process shares) or for a database
    only this process can open (in memory, or named by URI options)."""
    if not isinstance(bind, Engine):
        return None
    url = bind.url
    if url.database in (None, "", ":memory:") or url.query:
        return None
    return url.database


def row_digests(
    engine: Engine | Connection,
    table: SinkTable,
    record_ids: Iterable[str],
    buckets: int = DEFAULT_BUCKETS,
    within: IdRange = WHOLE,
) -> dict[str, RowDigest]:
    """The digests of just these records' rows, by primary-key lookups of ``ID_CHUNK`` ids:
    what an incremental run adds to its running totals for the rows it has just verified.
    Given the Connection the rows were verified through, the digests are of the rows it read
    (same transaction, same snapshot), not of a later write. An id without a row, or outside
    ``within``, is absent."""
    _check_buckets(buckets)
    result: dict[str, RowDigest] = {}
    with connected(engine) as connection:
        dialect = _prepare(connection)
        named = _Named.of(connection, table)
        condition, params = _where(connection, named, within)

        def statement(tagged: bool) -> sa.TextClause:
            return sa.text(
                f"{_digests_select(dialect, named, buckets, fence=False, tagged=tagged)} "
                f"WHERE {named.key} IN :ids AND {condition}"
            ).bindparams(sa.bindparam("ids", expanding=True))

        for chunk in database.chunks(sorted(set(record_ids)), ID_CHUNK):
            result.update(_row_digests(connection, statement, {"ids": chunk, **params}))
    return result


def every_row(
    engine: Engine | Connection, table: SinkTable, buckets: int = DEFAULT_BUCKETS
) -> dict[str, RowDigest]:
    """Every row's digest, by id (one of an id's duplicate rows; a row without an id under
    None, in :data:`NULL_BUCKET`): what a full run remembers."""
    _check_buckets(buckets)
    with connected(engine) as connection:
        dialect = _prepare(connection)
        named = _Named.of(connection, table)
        return _row_digests(
            connection,
            lambda tagged: sa.text(_digests_select(dialect, named, buckets, tagged=tagged)),
        )


def rows_in_buckets(
    engine: Engine | Connection,
    table: SinkTable,
    buckets_wanted: Iterable[int],
    buckets: int = DEFAULT_BUCKETS,
    within: IdRange = WHOLE,
) -> dict[str, RowDigest]:
    """Every row of the wanted buckets (``within`` a range of ids), with its digest: the
    drill-down into buckets that differ. One scan of the range (the bucket is computed, not
    stored), hashing only the rows of the wanted buckets."""
    _check_buckets(buckets)
    wanted = sorted(set(buckets_wanted))
    if not wanted:
        return {}
    with connected(engine) as connection:
        dialect = _prepare(connection)
        named = _Named.of(connection, table)
        condition, params = _where(connection, named, within)

        def statement(tagged: bool) -> sa.TextClause:
            return sa.text(
                f"{_digests_select(dialect, named, buckets, fence=False, tagged=tagged)} "
                f"WHERE {condition} AND {_bucket_sql(dialect, named, buckets)} IN :wanted"
            ).bindparams(sa.bindparam("wanted", expanding=True))

        return _row_digests(connection, statement, {"wanted": wanted, **params})


def id_after(
    engine: Engine | Connection, table: SinkTable, after: str | None, rows: int
) -> str | None:
    """The ``rows``-th id above ``after`` (from the first when None), in the database's
    order, by a walk of the primary key's index; None when fewer rows follow: where a slice of
    ``rows`` rows starting after ``after`` ends."""
    if rows < 1:
        raise BoardstreamError(f"a slice holds at least one row, not {rows}")
    with connected(engine) as connection:
        named = _Named.of(connection, table)
        key = named.key
        condition = f"{key} IS NOT NULL" if after is None else f"{key} > :after"
        return connection.execute(
            sa.text(
                f"SELECT {key} FROM {named.table} WHERE {condition} "
                f"ORDER BY {key} LIMIT 1 OFFSET :skip"
            ),
            {"after": after, "skip": rows - 1},
        ).scalar()


def _where(connection: Connection, named: _Named, within: IdRange) -> tuple[str, dict[str, str]]:
    """``within``'s condition on the table. Rows without an id only where the table lets them
    in: a key (or NOT NULL) keeps them out, and a test for them would scan the table instead of
    walking the key's index."""
    missing = f"{named.key} IS NULL"
    if within.whole:
        return within.where(missing, named.key)
    columns = sa.inspect(connection).get_columns(named.name)
    nullable = next(c["nullable"] for c in columns if c["name"] == named.key_name)
    return within.where(missing if nullable else None, named.key)


def connected(bind: Engine | Connection) -> AbstractContextManager[Connection]:
    """A connection of its own for an Engine; a Connection as it is (its transaction kept)."""
    if isinstance(bind, Connection):
        return nullcontext(bind)
    return bind.connect()


def _row_digests(
    connection: Connection,
    statement: Callable[[bool], sa.TextClause],
    params: Mapping[str, Any] | None = None,
) -> dict[str, RowDigest]:
    """The rows (record_id, bucket, digest) ``statement`` selects, by board; BLOBs tagged only
    when the table holds one (:func:`_blob_tagged_if_needed`)."""

    def read(tagged: bool) -> dict[str, RowDigest]:
        return {
            record_id: RowDigest(int(bucket), int(digest) & MASK_64)
            for record_id, bucket, digest in connection.execute(statement(tagged), params)
        }

    return _blob_tagged_if_needed(read)


def _digests_select(
    dialect: str,
    named: _Named,
    buckets: int,
    fence: bool = True,
    where: str = "",
    tagged: bool = False,
) -> str:
    """``SELECT key, bucket, digest FROM table [WHERE where]``, the digest a signed 64-bit
    integer (its two's complement is the row digest). ``fence`` keeps the database from
    inlining it into an outer query, which would hash each row twice (once per half);
    ``tagged``: see :func:`_canonical_sql`."""
    select = (
        f"SELECT {named.key}, {_bucket_sql(dialect, named, buckets)} AS bucket, "
        f"{_digest_sql(dialect, named.columns, tagged)} AS digest FROM {named.table}"
    )
    if where:
        select = f"{select} WHERE {where}"
    if not fence:
        return select
    return f"{select} {'OFFSET 0' if dialect == 'postgresql' else 'LIMIT -1'}"


def _digest_sql(dialect: str, columns: Sequence[str], tagged: bool) -> str:
    """The signed 64-bit digest of the canonical JSON array of the SQL expressions ``columns``."""
    canonical = _canonical_sql(dialect, columns, tagged)
    if dialect == "postgresql":
        return f"('x' || left({_pg_sha256_hex(canonical)}, 16))::bit(64)::bigint"
    return f"{sqlite_digests.DIGEST}(CAST({canonical} AS BLOB))"


def _canonical_sql(dialect: str, columns: Sequence[str], tagged: bool) -> str:
    """The canonical row of the SQL expressions ``columns``. SQLite's ``json_array`` refuses a
    BLOB, which SQLite lets into any column: ``tagged`` embeds one as ``["blob", hex]`` (never
    equal to any text) at the cost of a test per column and row (a fifth of the table's digest
    time); untagged, the same text for every other value (:func:`_blob_tagged_if_needed`)."""
    if dialect == "postgresql":
        return f"json_build_array({', '.join(columns)})::text"
    if tagged:
        columns = [
            f"CASE WHEN typeof({c}) = 'blob' THEN json_array('blob', hex({c})) ELSE {c} END"
            for c in columns
        ]
    return f"json_array({', '.join(columns)})"


def _blob_tagged_if_needed(read: Callable[[bool], T]) -> T:
    """``read(tagged=False)``: the canonical rows untagged, the same digests as tagged while no
    stored value is a BLOB; SQLite refuses the statement when one is, and it is read again,
    tagged. Only a table written by other hands holds a BLOB (the sink writes text and
    integers), so the second read is the rare case's."""
    try:
        return read(False)
    except (sa.exc.OperationalError, sqlite3.OperationalError) as error:
        if _JSON_BLOB not in str(getattr(error, "orig", error)):
            raise
    logger.info("the table holds a BLOB value: its rows digested with BLOBs tagged")
    return read(True)


def _bucket_sql(dialect: str, named: _Named, buckets: int) -> str:
    """The bucket of the row's id; :data:`NULL_BUCKET` for a row without one (SQLite lets a
    NULL into a non-integer primary key)."""
    key = named.key
    if dialect == "postgresql":
        bucket = f"(('x' || left({_pg_sha256_hex(key)}, 8))::bit(32)::bigint % {buckets})"
    else:
        bucket = f"{sqlite_digests.BUCKET}(CAST({key} AS BLOB), {buckets})"
    return f"coalesce({bucket}, {NULL_BUCKET})"


def _pg_sha256_hex(text: str) -> str:
    return f"encode(sha256(convert_to({text}, 'UTF8')), 'hex')"


def _prepare(connection: Connection) -> str:
    """The connection's dialect, with SQLite's hash functions registered on it."""
    dialect = connection.dialect.name
    if dialect == "sqlite":
        sqlite_digests.register(connection.connection.dbapi_connection)
    elif dialect != "postgresql":
        raise BoardstreamError(f"table digests support PostgreSQL and SQLite, not {dialect}")
    return dialect


@dataclass(frozen=True)
class _Named:
    """A sink table's names as this dialect's SQL writes them (quoted where it must)."""

    name: str  # the table's, unquoted
    table: str
    key_name: str  # the key column's, unquoted
    key: str
    columns: tuple[str, ...]  # every stored column but the load time, in order

    @classmethod
    def of(cls, connection: Connection, table: SinkTable) -> _Named:
        quote = connection.dialect.identifier_preparer.quote
        return cls(
            table.table.name,
            quote(table.table.name),
            table.key,
            quote(table.key),
            tuple(quote(column) for column in table.columns),
        )


def _check_buckets(buckets: int) -> None:
    if not 1 <= buckets <= 2**31:
        raise BoardstreamError(f"bucket count must be between 1 and 2**31, not {buckets}")
