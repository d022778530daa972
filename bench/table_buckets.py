"""The table's per-bucket digests (issue #22) next to their floors, SQLite (in board id order, as
the sink makes ``board_detail``, and with a rowid, as it made it before ``03c4cc8``) and
PostgreSQL side by side.

    .venv/bin/python bench/table_buckets.py                       # 447,017 rows, 3 repeats
    .venv/bin/python bench/table_buckets.py --rows 4470170 --repeat 1

Fills ``board_detail`` in two fresh SQLite files and a throwaway PostgreSQL server (started like
the tests' ``postgres`` fixture, on a free port) with the same seeded rows (titles ~40
characters, bodies ~200, a few NULLs; board ids random hex inserted in no order of theirs, as
the sink loads the generator's: a range of ids is spread over the whole table's pages), by bulk
insert (``executemany`` / ``COPY``), then times,
per database: ``SELECT count(*)`` and a plain read of every stored column through the driver
(the floors), the canonical JSON alone and with its hash (the hash's cost: SQLite's is the
registered Python function), one
``bucket_digests`` (4,096 buckets), ``row_digests`` of 1 % of the boards and ``rows_in_buckets``
of one bucket (the drill-down), and what an incremental run's table watch costs: one slice of
``--watch-rows`` rows starting a third of the way into the ids (``WATCH.look``; the whole
table when it holds no more); last, what one sink batch's write costs in that table (1 % new
boards and a newer version of 1 %, upserted). Each figure is the median of ``--repeat`` runs,
after one untimed full read (a warm cache, as a scheduled run right after the sink would find).
"""

from __future__ import annotations

import argparse
import io
import os
import random
import shutil
import socket
import statistics
import string
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from boardstream import database, key_order
from boardstream.reconcile.incremental import table_buckets as tb
from boardstream.reconcile.incremental.table_watch import TableWatch
from boardstream.settings import Settings
from boardstream.sink import table as sink_table
from boardstream.stack.postgres import Postgres

WATCH = TableWatch.of("board_detail")  # the shipped pipeline's

BATCH = 50_000
COLUMNS = sink_table.COLUMNS
TABLE = sink_table.BOARD_DETAIL


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def rows(count: int, seed: int = 1) -> Iterator[list[tuple[Any, ...]]]:
    """Batches of rows in COLUMNS order: text sliced from one random pool (fast), ~40-character
    titles and ~200-character bodies, every 13th city and 17th nickname NULL."""
    rng = random.Random(seed)
    pool = "".join(rng.choices(string.ascii_letters + string.digits + "     ", k=1 << 20))
    batch: list[tuple[Any, ...]] = []
    for i in range(count):
        t, b = rng.randrange(len(pool) - 300), rng.randrange(len(pool) - 300)
        member = rng.randrange(442_128)
        batch.append(
            (
                f"{rng.getrandbits(64):016x}{i:08x}",  # random hex, as the generator's
                member,
                None if i % 17 == 0 else f"nick{member}",
                None if i % 13 == 0 else ("Seoul", "Busan", "Incheon", "Daegu")[member % 4],
                f"010-{rng.randrange(10_000):04d}-{rng.randrange(10_000):04d}",
                pool[t : t + 35 + i % 11],
                pool[b : b + 180 + i % 41],
                1_700_000_000_000 + i,
                "2026-11-20T10:00:00.000Z",
                "2026-11-20T11:00:00.000Z",
                "2026-11-19T09:00:00.000Z",
                i % 3,
                i // 3,
                member % 3,
                member,
                i % 3,
                i // 3,
            )
        )
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def load_sqlite(engine: Engine, count: int, rowid: bool = False) -> None:
    """The rows into ``board_detail`` as the sink makes it (in board id order), or with
    ``rowid`` as it was made before ``03c4cc8`` (rows in insertion order, the key beside)."""
    if rowid:
        key_order.with_rowid(sink_table.board_detail).create(engine)
    else:
        sink_table.create(engine)
    marks = ", ".join("?" * len(COLUMNS))
    raw = engine.raw_connection()
    try:
        for batch in rows(count):
            raw.cursor().executemany(
                f"INSERT INTO board_detail ({', '.join(COLUMNS)}) VALUES ({marks})", batch
            )
        raw.commit()
    finally:
        raw.close()


def _copy_field(value: Any) -> str:
    if value is None:
        return "\\N"
    return str(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def load_postgres(engine: Engine, count: int) -> None:
    sink_table.create(engine)
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        for batch in rows(count):
            text = "".join("\t".join(map(_copy_field, row)) + "\n" for row in batch)
            cursor.copy_expert(
                f"COPY board_detail ({', '.join(COLUMNS)}) FROM STDIN", io.StringIO(text)
            )
        raw.commit()
    finally:
        raw.close()
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(sa.text("VACUUM ANALYZE board_detail"))


def count_rows(engine: Engine) -> int:
    with engine.connect() as connection:
        return connection.execute(sa.text("SELECT count(*) FROM board_detail")).scalar_one()


def full_read(engine: Engine) -> int:
    """Every stored column of every row through the driver, in chunks (a server-side cursor on
    PostgreSQL), kept nowhere."""
    read = 0
    with engine.connect().execution_options(stream_results=True) as connection:
        result = connection.exec_driver_sql(f"SELECT {', '.join(COLUMNS)} FROM board_detail")
        while chunk := result.fetchmany(BATCH):
            read += len(chunk)
    return read


def json_only(engine: Engine) -> int:
    """The canonical JSON of every row, measured, not hashed: the hash's share."""
    with engine.connect() as connection:
        canonical = tb._canonical_sql(engine.dialect.name, COLUMNS, tagged=False)
        sql = f"SELECT sum(length({canonical})) FROM board_detail"
        return connection.execute(sa.text(sql)).scalar_one()


def canonical_hashed(engine: Engine) -> int:
    """The canonical JSON of every row, hashed into its row digest (SQLite: by the registered
    Python function), neither bucketed nor grouped: the hash's own cost over the JSON alone."""
    with engine.connect() as connection:
        dialect = tb._prepare(connection)
        digest = tb._digest_sql(dialect, COLUMNS, tagged=False)
        sql = f"SELECT sum({digest} & 1) FROM board_detail"
        return connection.execute(sa.text(sql)).scalar_one()


def timed(function: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    seconds, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


def watch_slice(engine: Engine, count: int, watch_rows: int) -> float:
    """One incremental run's look at the table, from a third of the way into the ids."""
    WATCH.create(engine)
    with engine.begin() as connection:
        connection.execute(WATCH.slice_table.delete())
        if count > watch_rows:
            cursor = tb.id_after(connection, TABLE, None, count // 3)
            connection.execute(WATCH.slice_table.insert().values(through=cursor))
    start = time.perf_counter()
    seen = WATCH.look(engine, TABLE, watch_rows)
    seconds = time.perf_counter() - start
    expected = count if count <= watch_rows else min(watch_rows, count - count // 3)
    assert sum(d.rows for d in seen.digests.values()) == expected
    return seconds


def measure(engine: Engine, count: int, repeat: int, watch_rows: int) -> dict[str, float]:
    assert full_read(engine) == count  # warm-up, untimed
    ids: list[str] = []
    with engine.connect() as connection:
        all_ids = connection.execute(sa.text("SELECT board_id FROM board_detail")).scalars().all()
    ids = random.Random(2).sample(all_ids, round(count / 100))
    del all_ids
    figures: dict[str, float] = {}
    figures["count(*)"], counted = timed(lambda: count_rows(engine), repeat)
    figures["full read"], read = timed(lambda: full_read(engine), repeat)
    figures["canonical JSON only"], _ = timed(lambda: json_only(engine), repeat)
    figures["canonical JSON + row digest"], _ = timed(lambda: canonical_hashed(engine), repeat)
    figures["bucket_digests"], digests = timed(lambda: tb.bucket_digests(engine, TABLE), repeat)
    figures["row_digests (1 %)"], picked = timed(lambda: tb.row_digests(engine, TABLE, ids), repeat)
    figures["rows_in_buckets (1)"], drilled = timed(
        lambda: tb.rows_in_buckets(engine, TABLE, [7]), repeat
    )
    figures["watch slice"] = statistics.median(
        watch_slice(engine, count, watch_rows) for _ in range(repeat)
    )
    assert counted == read == count == sum(d.rows for d in digests.values())
    assert len(picked) == len(ids)
    assert tb.totals(drilled.values()).get(7, tb.EMPTY) == digests.get(7, tb.EMPTY)
    figures["row_digests boards"] = len(ids)
    figures["sink upsert (1 % new, 1 % replaced)"] = statistics.median(
        sink_batch(engine, ids, seed) for seed in range(repeat)
    )
    return figures


def sink_batch(engine: Engine, replaced: list[str], seed: int) -> float:
    """One sink batch's write: as many new boards as ``replaced`` and a newer version of each
    of ``replaced``, upserted as the sink does (it grows the table by the new ones)."""
    fresh = [dict(zip(COLUMNS, row, strict=True)) for row in next(rows(len(replaced), seed + 10))]
    newer = [{**row, "board_id": board_id} for row, board_id in zip(fresh, replaced, strict=True)]
    batch = [{**row, "board_id": f"new{seed}-{row['board_id']}"} for row in fresh] + [
        {**row, "detail_offset": 10**12 + seed} for row in newer
    ]
    start = time.perf_counter()
    assert sink_table.upsert(engine, batch) == len(batch)
    return time.perf_counter() - start


def start_postgres(var_dir: Path) -> Postgres:
    os.chmod(var_dir, 0o755)  # PostgreSQL's system user must enter it when we are root
    server = Postgres(Settings(var_dir=var_dir, postgres_port=free_port()))
    server.start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=447_017)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--watch-rows",
        type=int,
        default=Settings().reconcile_watch_rows,
        help="rows an incremental run's table watch hashes (default: the setting's)",
    )
    args = parser.parse_args()
    var_dir = Path(tempfile.mkdtemp(prefix="bench-buckets-"))
    server = start_postgres(var_dir)
    try:
        engines = {
            "SQLite": database.engine(f"sqlite:///{var_dir / 'board_detail.db'}"),
            "SQLite, rowid": database.engine(f"sqlite:///{var_dir / 'rowid.db'}"),
            "PostgreSQL": database.engine(server.url),
        }
        loaders = {
            "SQLite": load_sqlite,
            "SQLite, rowid": partial(load_sqlite, rowid=True),
            "PostgreSQL": load_postgres,
        }
        results: dict[str, dict[str, float]] = {}
        for name, engine in engines.items():
            start = time.perf_counter()
            loaders[name](engine, args.rows)
            print(f"{name}: {args.rows:,} rows loaded in {time.perf_counter() - start:.1f} s")
            results[name] = measure(engine, args.rows, args.repeat, args.watch_rows)
            engine.dispose()
        report(results, args)
    finally:
        server.process.stop()
        subprocess.run(["sync"], check=False)
        shutil.rmtree(var_dir, ignore_errors=True)


def report(results: dict[str, dict[str, float]], args: argparse.Namespace) -> None:
    names = list(results)
    print(
        f"\n{args.rows:,} rows, median of {args.repeat}; 4,096 buckets; "
        f"watch slices of {args.watch_rows:,} rows"
    )
    print(f"| measure | {' | '.join(names)} |")
    print(f"|---|{'---:|' * len(names)}")
    for measure_name in (
        "count(*)",
        "full read",
        "canonical JSON only",
        "canonical JSON + row digest",
        "bucket_digests",
        "rows_in_buckets (1)",
        "row_digests (1 %)",
        "watch slice",
        "sink upsert (1 % new, 1 % replaced)",
    ):
        cells = [f"{results[n][measure_name]:.3f} s" for n in names]
        print(f"| {measure_name} | {' | '.join(cells)} |")
    ratios = {
        "bucket_digests / full read": ("bucket_digests", "full read"),
        "bucket_digests / count(*)": ("bucket_digests", "count(*)"),
        "row_digests (1 %) / bucket_digests": ("row_digests (1 %)", "bucket_digests"),
        "watch slice / bucket_digests": ("watch slice", "bucket_digests"),
        "bucket_digests beyond the canonical JSON": ("canonical JSON only", "bucket_digests"),
        "row digest's hash beyond the canonical JSON": (
            "canonical JSON only",
            "canonical JSON + row digest",
        ),
    }
    for label, (top, bottom) in ratios.items():
        cells = []
        for n in names:
            value = results[n][top] / results[n][bottom]
            cells.append(f"{1 - value:.0%}" if "beyond" in label else f"{value:.2f}x")
        print(f"| {label} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
