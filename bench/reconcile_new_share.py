"""Does an incremental reconciliation ever cost more than a full one? By how much is new (#67).

    .venv/bin/boardstream stack up
    .venv/bin/python bench/reconcile_new_share.py                      # 1 %, 10 %, 100 % new
    .venv/bin/python bench/reconcile_new_share.py --scale 0.1 --shares 0.01,1

Produces the seeded backlog (``--scale`` of production), drains it through the join and the
sink and fills the digest ledger with a full run. Then, for each share in ``--shares``, in one
session: that share of the backlog's boards produced as new boards of existing members and
drained; the platform's database saved; a full run (time, and the peak resident memory of this
process and its Spark JVM); the database put back as saved, then an incremental run (the same).
Both runs so start from the same state: the same topics and checkpoints (a run only reads them)
and the same ledger (a run after another of the same state would find its records stored). Past
``BOARDSTREAM_RECONCILE_IN_PROCESS_MAX_RECORDS`` new records the incremental run is a full one
(its kind is printed). The backlog is dropped at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import sqlite3
import time
from pathlib import Path

import sqlalchemy as sa
from backlog import drain, drop_backlog, produce_backlog
from memory import peak_rss
from reconcile_incremental import produce_new_boards

from boardstream import database, logs, reconcile
from boardstream.reconcile.evidence.run_ledger import FULL, INCREMENTAL
from boardstream.reconcile.incremental.digest_ledger import DigestLedger
from boardstream.spark.session import spark_session

LEDGER = DigestLedger.of("board_detail", "bigint")  # the shipped pipeline's

NAME = "bench-share"


def measured(action):
    """``action()``, its seconds and its peak resident memory (GiB)."""
    began = time.perf_counter()
    with peak_rss() as peak:
        result = action()
    return result, time.perf_counter() - began, peak.gib


def database_file(url: str) -> Path:
    """The SQLite file of ``url``: the bench's database is its var dir's own."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        raise SystemExit(f"the bench saves and restores a SQLite database, not {url}")
    return Path(parsed.database)


def copy_database(url: str, to: Path) -> None:
    """A consistent copy of the SQLite database at ``url`` into ``to`` (SQLite's backup API)."""
    source = sqlite3.connect(database_file(url))
    target = sqlite3.connect(to)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of production scale")
    parser.add_argument(
        "--shares", default="0.01,0.1,1", help="new boards, as fractions of the backlog's"
    )
    parser.add_argument("--keep", action="store_true", help="leave the backlog in place")
    args = parser.parse_args()
    shares = [float(share) for share in args.shares.split(",")]
    logs.configure(verbose=False)
    settings, manifest = produce_backlog(NAME, args.scale)
    spark = spark_session(settings, "bench-reconcile-new-share")
    spark.sparkContext.setLogLevel("ERROR")
    drain(spark, settings)
    run_once = reconcile.run_once  # imported (with GX) before any clock starts
    first = run_once(spark, settings, "bench", kind=FULL)
    assert first.passed, "\n".join(first.summary())
    with database.engine(settings.database).connect() as connection:
        boards = sum(LEDGER.cursor(connection)[settings.board_topic].values())
    print(f"backlog: {boards:,} boards; ledger filled by run {first.run_id}", flush=True)
    rows = []
    for share in shares:
        new_boards = max(1, round(boards * share))
        produce_new_boards(settings, new_boards, manifest.options["members"])
        drain(spark, settings)
        saved = settings.var_dir / "before-runs.db"
        copy_database(settings.database, saved)
        runs = {}
        for kind in (FULL, INCREMENTAL):
            if kind == INCREMENTAL:
                copy_database(f"sqlite:///{saved}", database_file(settings.database))
            result, seconds, gib = measured(
                lambda kind=kind: run_once(spark, settings, "bench", kind=kind)
            )
            assert result.passed, "\n".join(result.summary())
            runs[kind] = (result.kind, seconds, gib)
            print(
                f"{share:.0%} new, {kind} asked: {result.kind}, {seconds:.1f} s, {gib:.2f} GiB",
                flush=True,
            )
        (ran, inc_s, inc_gib), (_, full_s, full_gib) = runs[INCREMENTAL], runs[FULL]
        rows.append(
            f"| {share:.0%} ({new_boards:,} boards) | {ran} | {inc_s:.1f} | {inc_gib:.2f} | "
            f"{full_s:.1f} | {full_gib:.2f} | {inc_s / full_s:.2f}x | {inc_gib / full_gib:.2f}x |"
        )
    print(
        "\n| new | incremental ran as | incremental s | GiB | full s | GiB | time ratio "
        "| memory ratio |\n|---|---|---:|---:|---:|---:|---:|---:|"
    )
    print("\n".join(rows))
    if args.keep:
        print(f"backlog kept: {settings.var_dir}")
        return
    drop_backlog(settings)


if __name__ == "__main__":
    main()
