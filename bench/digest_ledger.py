"""The digest ledger (issue #22) at production scale, on SQLite and on a throwaway PostgreSQL.

    .venv/bin/python bench/digest_ledger.py                 # 1x: 447,017 boards, 442,128 members
    .venv/bin/python bench/digest_ledger.py --scale 10      # 10x
    .venv/bin/python bench/digest_ledger.py --backends sqlite

Fills the ledger with synthetic rows (447,017 sources, 447,017 joined outputs, 442,128 member
versions at 1x, ten times as many at ``--scale 10``) and times that baseline append, then the
lookups of 4,470 random keys (``--keys``; 1 % of 1x, the same number at any scale: positions,
board ids, member ids) and the append of as many new rows to each table. Beside the ledger's
own lookups (chunks of bound parameters) it times the alternative, the keys loaded into a
temporary table and joined, and on PostgreSQL the baseline through executemany instead of COPY
(``--no-executemany`` skips that, about 30-50 s at 1x). Each lookup figure is the best of
``--repeat`` runs against a warm database; appends run once.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from boardstream import database
from boardstream.reconcile.incremental import digest_ledger as ledger
from boardstream.reconcile.incremental.digest_ledger import DigestLedger
from boardstream.settings import Settings
from boardstream.stack.postgres import Postgres

LEDGER = DigestLedger.of("board_detail", "bigint")  # the shipped pipeline's

BOARDS, MEMBERS = 447_017, 442_128
PARTITIONS = 6
MEMBER_IDS = 300_000  # distinct members at 1x: some have several versions


def synthetic(scale: float, seed: int, first: int = 0, n: int | None = None) -> dict[str, pa.Table]:
    """Rows for the three large tables: board i at source position (i % 6, i // 6), joined at
    the same position of board-detail; member version j at (j % 6, j // 6)."""
    rng = random.Random(seed)
    boards = int(BOARDS * scale) if n is None else n
    members = int(MEMBERS * scale) if n is None else n
    ids = range(first, first + boards)
    member_ids = max(1, int(MEMBER_IDS * scale))

    def digests(count: int) -> pa.Array:
        return pa.array([rng.getrandbits(60) for _ in range(count)], pa.int64())

    partition = pa.array([i % PARTITIONS for i in ids], pa.int32())
    offset = pa.array([i // PARTITIONS for i in ids], pa.int64())
    board_id = pa.array([f"b{i:09d}" for i in ids], pa.string())
    board_digest = digests(boards)
    member_of = pa.array([rng.randrange(member_ids) for _ in ids], pa.int64())
    sources = pa.table(
        {
            "board_id": board_id,
            "source_partition": partition,
            "source_offset": offset,
            "board_digest": board_digest,
        }
    )
    details = pa.table(
        {
            "board_id": board_id,
            "member_id": member_of,
            "source_partition": partition,
            "source_offset": offset,
            "detail_partition": partition,
            "detail_offset": offset,
            "digest": digests(boards),
            "board_digest": board_digest,
            "member_partition": pa.array(
                [m % PARTITIONS for m in member_of.to_pylist()], pa.int32()
            ),
            "member_offset": offset,
            "member_digest": digests(boards),
        }
    )
    versions = range(first, first + members)
    members_table = pa.table(
        {
            "member_id": pa.array([j % member_ids for j in versions], pa.int64()),
            "member_partition": pa.array([j % PARTITIONS for j in versions], pa.int32()),
            "member_offset": pa.array([j // PARTITIONS for j in versions], pa.int64()),
            "member_digest": digests(members),
            "tombstone": pa.array([j % 97 == 0 for j in versions], pa.bool_()),
        }
    )
    return {
        "reconcile_source": sources,
        "reconcile_output": LEDGER.outputs("joined", details),
        "reconcile_member": members_table,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def timed(action: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - start)
    return best, result


def temp_table_lookup(
    connection: Connection, table: sa.Table, key_columns: tuple[str, ...], keys: list[Any]
) -> pa.Table:
    """The alternative to chunked parameters: the keys into a temporary table, one join."""
    columns = [table.c[name] for name in key_columns]
    temp = sa.Table(
        "lookup_keys",
        sa.MetaData(),
        *[sa.Column(c.name, c.type) for c in columns],
        prefixes=["TEMPORARY"],
    )
    temp.create(connection)
    rows = [dict(zip(key_columns, k if len(columns) > 1 else (k,), strict=True)) for k in keys]
    connection.execute(temp.insert(), rows)
    on = sa.and_(*[temp.c[c.name] == c for c in columns])
    found = connection.execute(sa.select(table).join(temp, on)).all()
    temp.drop(connection)
    schema = ledger.arrow_schema(table)
    return pa.Table.from_batches(ledger._batch(found, schema), schema)


@contextlib.contextmanager
def backend(name: str) -> Iterator[Engine]:
    home = Path(tempfile.mkdtemp(prefix=f"bench-ledger-{name}-"))
    home.chmod(0o755)
    server = None
    try:
        if name == "sqlite":
            url = f"sqlite:///{home / 'ledger.db'}"
        else:
            settings = Settings(var_dir=home, postgres_port=free_port())
            server = Postgres(settings)
            server.start()
            url = server.url
        engine = database.engine(url)
        LEDGER.create(engine)
        yield engine
        engine.dispose()
    finally:
        if server is not None:
            server.process.stop()
        shutil.rmtree(home, ignore_errors=True)


def run(name: str, scale: float, keys: int, repeat: int, executemany: bool) -> dict[str, float]:
    figures: dict[str, float] = {}
    baseline = synthetic(scale, seed=1)
    extra = synthetic(scale, seed=2, first=10**9, n=keys)
    with backend(name) as engine:
        if name == "postgresql" and executemany:
            # executemany (SQLAlchemy's multi-row INSERT) against COPY, on a scratch copy
            with engine.begin() as connection:
                threshold, ledger.COPY_THRESHOLD = ledger.COPY_THRESHOLD, 1 << 62
                try:
                    figures["baseline append, executemany"], _ = timed(
                        lambda: LEDGER.append(
                            connection, "reconcile_source", baseline["reconcile_source"]
                        )
                    )
                finally:
                    ledger.COPY_THRESHOLD = threshold
                connection.execute(sa.delete(LEDGER.source_table))
                figures["baseline append, COPY"], _ = timed(
                    lambda: LEDGER.append(
                        connection, "reconcile_source", baseline["reconcile_source"]
                    )
                )
                connection.rollback()
        for table, rows in baseline.items():
            with engine.begin() as connection:
                figures[f"append {table} ({rows.num_rows:,})"], _ = timed(
                    lambda c=connection, t=table, r=rows: LEDGER.append(c, t, r)
                )
        with engine.begin() as connection:
            connection.execute(sa.text("ANALYZE"))  # as autovacuum or a later run would have
        rng = random.Random(3)
        n = keys
        sources = baseline["reconcile_source"]
        picks = rng.sample(range(sources.num_rows), n)
        positions = [
            (sources["source_partition"][i].as_py(), sources["source_offset"][i].as_py())
            for i in picks
        ]
        board_ids = [sources["board_id"][i].as_py() for i in picks]
        members = baseline["reconcile_member"]
        member_picks = rng.sample(range(members.num_rows), n)
        member_positions = [
            (members["member_partition"][i].as_py(), members["member_offset"][i].as_py())
            for i in member_picks
        ]
        member_ids = sorted({members["member_id"][i].as_py() for i in member_picks})
        lookups = {
            "sources_at": lambda c: LEDGER.sources_at(c, positions),
            "outputs_at": lambda c: LEDGER.outputs_at(c, positions),
            "outputs_of": lambda c: LEDGER.outputs_of(c, board_ids),
            "details_at": lambda c: LEDGER.details_at(c, positions),
            "members_at": lambda c: LEDGER.members_at(c, member_positions),
            "members_of": lambda c: LEDGER.members_of(c, member_ids),
            "sources_at, temp table": lambda c: temp_table_lookup(
                c, LEDGER.source_table, ("source_partition", "source_offset"), positions
            ),
            "members_of, temp table": lambda c: temp_table_lookup(
                c, LEDGER.member_table, ("member_id",), member_ids
            ),
        }
        with engine.begin() as connection:
            for label, lookup in lookups.items():
                seconds, found = timed(lambda f=lookup, c=connection: f(c), repeat)
                figures[f"{label} ({found.num_rows:,} rows)"] = seconds
            LEDGER.advance(connection, {"board": {0: 1}})
        for table, rows in extra.items():
            with engine.begin() as connection:
                figures[f"append new {table} ({rows.num_rows:,})"], _ = timed(
                    lambda c=connection, t=table, r=rows: LEDGER.append(c, t, r)
                )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiple of production scale")
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument(
        "--keys",
        type=int,
        default=BOARDS // 100,
        help="keys per lookup and new rows per table (default 4,470, 1 %% of 1x, at any scale)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each lookup (best kept)")
    parser.add_argument(
        "--no-executemany",
        action="store_true",
        help="skip PostgreSQL's baseline through executemany (about 25x COPY's time)",
    )
    args = parser.parse_args()
    results = {}
    for name in args.backends:
        start = time.perf_counter()
        results[name] = run(name, args.scale, args.keys, args.repeat, not args.no_executemany)
        print(f"{name}: {time.perf_counter() - start:.1f} s in all", flush=True)
    labels = list(dict.fromkeys(label for figures in results.values() for label in figures))
    names = list(results)
    header = f"| {args.scale:g}x rows, {args.keys:,} keys | " + " | ".join(names)
    if len(names) == 2:
        header += f" | {names[1]} / {names[0]}"
    print(header + " |")
    print("|---" + "|---:" * (len(names) + (len(names) == 2)) + "|")
    for label in labels:
        cells = [results[n].get(label) for n in names]
        line = f"| {label} | " + " | ".join("" if c is None else f"{c:.3f} s" for c in cells)
        if len(names) == 2:
            ratio = f"{cells[1] / cells[0]:.2f}x" if None not in cells and cells[0] else ""
            line += f" | {ratio}"
        print(line + " |")


if __name__ == "__main__":
    main()
