"""An incremental run's inputs (#22): the checks' frames for just the keys new data touches.

The records past the digest ledger's cursor are read from the topics; every older record of a
touched key is looked up in the ledger. Records the topics no longer hold (below a partition's
earliest offset: retention, ``deleteRecords``) are left out, as a full run, which reads from the
earliest offset, never sees them; but an output's is kept as evidence of its source position's
outcome (:mod:`.expired`), as a full run takes it from the ledger. :mod:`.arrow_checks` then
checks them as :mod:`.spark_checks` checks a full run's frames: the same facts, without Spark's
fixed cost per query.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sqlalchemy.engine import Connection, Engine

from boardstream.errors import BoardstreamError
from boardstream.kafka.clients import admin_client
from boardstream.reconcile.checks import arrow_checks
from boardstream.reconcile.checks import spark_checks as checks
from boardstream.reconcile.checks.arrow_checks import ArrowInputs
from boardstream.reconcile.checks.spark_checks import Records
from boardstream.reconcile.evidence.run_ledger import covered
from boardstream.reconcile.incremental import affected, baseline, digest_ledger, table_watch
from boardstream.reconcile.incremental.affected import Keys, Position
from boardstream.reconcile.incremental.digest_ledger import DigestLedger
from boardstream.reconcile.incremental.store import Store
from boardstream.reconcile.reads import expired, readers
from boardstream.reconcile.reads.snapshot import Offsets, Snapshot, retained
from boardstream.reconcile.target import DEAD_LETTERED, UNMATCHED, ReconcileTarget
from boardstream.settings import Settings
from boardstream.sink.table import SinkTable
from boardstream.timing import phase

log = logging.getLogger(__name__)

SOURCE = ("source_partition", "source_offset")
RECORD = ("record_partition", "record_offset")
DETAIL = ("detail_partition", "detail_offset")
MEMBER = ("member_partition", "member_offset")
# Kinds a key keeps once its board has gone its way: no reason to check it again unasked.
SETTLED = (
    "source",
    "read",
    "joined",
    "unmatched",
    "dead_lettered",
    "expected_table_rows",
    "sink_dead_lettered",
    "source_expired",
    "topic_replays",
    "expired_evidence",
    "superseded",
)


def read_new(
    spark: SparkSession,
    settings: Settings,
    target: ReconcileTarget,
    snapshot: Snapshot,
    cursor: Offsets,
) -> tuple[Records, Snapshot]:
    """Each topic from the ledger's cursor to the snapshot's end, in one read by the driver's
    consumer (:func:`readers.consume_topics`), and the snapshot with the start offsets listed
    after it (:func:`snapshot.retained`), its records below them left out. The records are then
    in memory (a local relation, for a run's usual few thousand), so each reader's job reads
    them from there: nothing to cache, and Spark evaluates a reader of an empty topic without
    a job."""
    topics, layout = target.topics, target.layout
    every = readers.consume_topics(
        spark,
        settings,
        {name: (cursor.get(name, {}), snapshot.latest[name]) for name in target.read},
    )

    after = retained(admin_client(settings), settings, snapshot)

    def topic(name: str) -> DataFrame:
        return readers.at_or_after(
            every.where(F.col("topic") == name),
            after.earliest[name],
            snapshot.earliest.get(name, {}),
        )

    dlq = topic(topics.dead_letters)
    refused = [
        readers.dead_letters(dlq, name).select(
            F.lit(name).alias("source_topic"), "source_partition", "source_offset"
        )
        for name in (topics.joined, topics.table)
    ]
    records = Records(
        sources=readers.sources(topic(topics.stream), layout).toArrow(),
        details=readers.details(topic(topics.joined), layout).toArrow(),
        unmatched=readers.unmatched(topic(topics.unmatched), layout).toArrow(),
        dead_letters=readers.dead_letters(dlq, topics.stream).toArrow(),
        refused=refused[0].unionByName(refused[1]).toArrow(),
        members=readers.members(topic(topics.table), layout).toArrow(),
    )
    return records, after


def seeds(new: Records, carried: Keys) -> Keys:
    """The keys new data touches before closure: every new source position and every source
    position a new output names, every board with a new board-detail record, and the
    ``carried`` keys (:func:`carried`)."""
    named = [new.sources, new.details, new.unmatched, new.dead_letters]
    return carried | Keys.of(
        {p for table in named for p in _positions(table, SOURCE)},
        new.details.column("board_id").drop_null().to_pylist(),
    )


def carried(
    connection: Connection,
    store: Store,
    target: ReconcileTarget,
    snapshot: Snapshot,
    waiting: pa.Table,
) -> Keys:
    """The keys checked again though no new record names them: open at the last run
    (:meth:`FactStore.open_keys`); every waiting board, by position and by board (its
    ``overdue_pending`` or ``stuck_pending`` facts are keyed by board, so each run replaces
    them); and the keys of records the topics have deleted since (below a partition's earliest
    offset), whose facts a full run would no longer find."""
    keys = store.facts.open_keys(connection, SETTLED) | Keys.of(
        set(_positions(waiting, SOURCE)), waiting.column("board_id").drop_null().to_pylist()
    )
    earliest = snapshot.earliest
    gone = [
        store.ledger.below(connection, "source", earliest.get(target.topics.stream, {})),
        *(
            store.ledger.below(connection, holder, earliest.get(topic, {}))
            for holder, topic in target.holders.items()
        ),
    ]
    return keys | Keys.of(
        {p for table in gone for p in _positions(table, SOURCE)},
        gone[1].column("board_id").drop_null().to_pylist(),
    )


def lookups(
    connection: Connection, ledger: DigestLedger, new: Records
) -> tuple[Callable[[frozenset[str]], list[Position]], Callable[[frozenset[Position]], list[str]]]:
    """``affected.close``'s two relations over the ledger and the new records: the source
    positions of the boards' joined records, the boards of the joined records at positions."""

    def positions_of(boards: frozenset[str]) -> list[Position]:
        old = ledger.outputs_of(connection, boards)
        return _positions(old, SOURCE) + _positions(_of(new.details, boards), SOURCE)

    def boards_at(positions: frozenset[Position]) -> list[str]:
        old = ledger.outputs_at(connection, positions)
        old = old.filter(pc.equal(old["holder"], "joined"))
        mine = _at(new.details, SOURCE, positions)
        return [b for t in (old, mine) for b in t.column("board_id").drop_null().to_pylist()]

    return positions_of, boards_at


def inputs_for(
    spark: SparkSession,
    connection: Connection,
    ledger: DigestLedger,
    target: ReconcileTarget,
    snapshot: Snapshot,
    keys: Keys,
    new: Records,
    table: readers.TableRead,
    waiting: pa.Table,
    unseen: tuple[str, ...],
) -> ArrowInputs:
    """The checks' inputs for ``keys`` (closed): the ledger's records of them and the new
    ones, less what the topics no longer hold; ``table``, the rows of the keys' boards, with
    their digests (Spark's, as a full run computes them); ``waiting`` (the join's waiting
    boards, all of them: the state is small)."""
    earliest = snapshot.earliest
    positions, boards = keys.positions, keys.boards
    held = ledger.outputs_at(connection, positions)

    def holder(name: str) -> pa.Table:
        return held.filter(pc.equal(held["holder"], name))

    topics, layout = target.topics, target.layout
    board = earliest.get(topics.stream, {})
    detail_earliest = earliest.get(topics.joined, {})
    details = _kept(
        [
            digest_ledger.as_details(holder("joined")),
            ledger.outputs_of(connection, boards),
            _at(new.details, SOURCE, positions),
            _of(new.details, boards),
        ],
        DETAIL,
        detail_earliest,
        board,
    )
    loaded_from = expired.table_details(
        spark, layout, table.rows, detail_earliest, board, _positions(details, DETAIL)
    )
    details = pa.concat_tables([details, loaded_from.cast(details.schema)])
    member_ids = {
        *details.column("member_id").to_pylist(),
        *waiting.column("member_id").to_pylist(),
    } - {None}
    named_versions = set(_positions(details, MEMBER))
    members = _kept(
        [
            ledger.members_at(connection, named_versions),
            ledger.members_of(connection, member_ids),
            new.members.filter(
                pc.is_in(
                    new.members["member_id"],
                    pa.array(sorted(member_ids), new.members.schema.field("member_id").type),
                )
            ),
            _at(new.members, MEMBER, named_versions),
        ],
        MEMBER,
        earliest.get(topics.table, {}),
    )
    outputs = {
        name: _kept(
            [holder(name).select(new_table.column_names), _at(new_table, SOURCE, positions)],
            RECORD,
            earliest.get(topic, {}),
            board,
        )
        for name, new_table, topic in (
            (UNMATCHED, new.unmatched, topics.unmatched),
            (DEAD_LETTERED, new.dead_letters, topics.dead_letters),
        )
    }
    sources = _kept(
        [ledger.sources_at(connection, positions), _at(new.sources, SOURCE, positions)],
        SOURCE,
        board,
    )

    def refused(topic: str, at: set[Position], prefix: str) -> pa.Table:
        found = _concat(
            [
                ledger.refused_at(connection, topic, at),
                _at(new.refused.filter(pc.equal(new.refused["source_topic"], topic)), SOURCE, at),
            ]
        )
        return found.select(list(SOURCE)).rename_columns(
            [f"{prefix}_partition", f"{prefix}_offset"]
        )

    return ArrowInputs(
        sources=sources,
        details=details,
        unmatched=outputs[UNMATCHED],
        board_dead_letters=outputs[DEAD_LETTERED],
        sink_dead_letters=refused(topics.joined, set(_positions(details, DETAIL)), "detail"),
        refused_members=refused(topics.table, set(_positions(members, MEMBER)), "member"),
        members=members,
        table=readers.table_rows(spark, table, layout).toArrow(),
        waiting=waiting,
        table_read=table,
        unseen=unseen,
    )


def _look(engine: Engine, store: Store, table: SinkTable, rows: int) -> table_watch.Look:
    with phase("reconcile: the table's bucket digests"):
        return store.watch.look(engine, table, rows)


def _positions(table: pa.Table, columns: tuple[str, str]) -> list[Position]:
    return list(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def _at(table: pa.Table, columns: tuple[str, str], positions: Iterable[Position]) -> pa.Table:
    """The rows of ``table`` at one of ``positions`` (its ``columns``)."""
    wanted = {f"{p}@{o}" for p, o in positions}
    here = [f"{p}@{o}" for p, o in _positions(table, columns)]
    return table.filter(pa.array([key in wanted for key in here], pa.bool_()))


def _of(details: pa.Table, boards: Iterable[str]) -> pa.Table:
    return details.filter(pc.is_in(details["board_id"], pa.array(sorted(boards), pa.string())))


def _concat(tables: list[pa.Table]) -> pa.Table:
    """One table of ``tables``' rows, in the first one's columns and types."""
    first = tables[0].schema
    return pa.concat_tables([t.select(first.names).cast(first) for t in tables])


def _kept(
    tables: list[pa.Table],
    position: tuple[str, str],
    earliest: dict[int, int],
    board: dict[int, int] | None = None,
) -> pa.Table:
    """``tables``' rows, each record once (by its own ``position``), less those below their
    partition's ``earliest`` offset: records the topic no longer holds. Outputs (``board``:
    the source's earliest offsets) keep those that are evidence (:func:`expired.accountable`),
    flagged expired."""
    rows = _concat(tables)
    seen: set[Position] = set()
    first = []
    for p, o in _positions(rows, position):
        first.append((p, o) not in seen)
        seen.add((p, o))
    gone = expired.below(rows, position, earliest)
    if board is None:
        return rows.filter(pc.and_(pa.array(first, pa.bool_()), pc.invert(gone)))
    wanted = pc.or_(pc.invert(gone), expired.accountable(rows, position, earliest, board))
    rows = expired.flagged(rows, gone)
    return rows.filter(pc.and_(pa.array(first, pa.bool_()), wanted))


@dataclass(frozen=True)
class Checked:
    """What one incremental run re-checked (read only: :func:`store` writes it), and what its
    verdict needs beside the fact store."""

    keys: Keys
    found: pa.Table  # the facts of ``keys`` as checked now
    cursor: Offsets  # the ledger's cursor the run read from
    latest: Offsets  # the snapshot's end: the cursor once stored
    new: Records  # the records past the cursor, for the ledger
    found_unseen: list[expired.Range]  # output records deleted unread since the cursor
    seen: table_watch.Look  # the table's slice looked at, its bucket digests
    table_snapshot: pd.DataFrame  # board_id, member_id of the re-checked boards' rows
    expected_rows: int  # how many of those rows the checks expect
    waiting: list[str]  # the oldest waiting boards, as the summary lists them
    covered: dict[str, dict[str, list[int]]]  # per topic and partition, the offsets read
    table_slice: dict[str, object]  # the rows of the table looked at (Look.as_json)
    table: SinkTable  # the table whose rows it re-checked, remembered once stored


def check(
    spark: SparkSession,
    connection: Connection,
    settings: Settings,
    target: ReconcileTarget,
    store: Store,
    snapshot: Snapshot,
    join_checkpoint: str,
    options: checks.ReconcileOptions,
    now_ms: int,
) -> Checked:
    """Re-check the keys new data touches and the boards whose rows changed since they were
    checked (:meth:`TableWatch.suspects`), reading only: nothing is written until
    :func:`store`, so a database with one writer at a time (SQLite) is not held while the run
    reads the topics and the table (the sink and the leases write meanwhile). A ledger no full
    run has filled yet is refused, and so is a snapshot a later run has checked past."""
    cursor = store.ledger.cursor(connection)
    if not cursor:
        raise BoardstreamError(
            "no full reconciliation has filled the digest ledger yet: run one first "
            "(boardstream reconcile --full)"
        )
    ahead = [
        f"{topic}[{p}]@{end}"
        for topic, ends in cursor.items()
        for p, end in ends.items()
        if end > snapshot.latest.get(topic, {}).get(p, end)
    ]
    if ahead:
        raise BoardstreamError(
            "a run that started later has already checked past this run's snapshot "
            f"({', '.join(sorted(ahead))}): this one would check older data as new"
        )
    mode = checks.join_mode(spark, join_checkpoint)

    def checked(keys: Keys) -> tuple[ArrowInputs, pa.Table]:
        with phase("reconcile: their records, rows and checks"):
            table = readers.read_live_table(settings, target, snapshot, sorted(keys.boards))
            inputs = inputs_for(
                spark, connection, store.ledger, target, snapshot, keys, new, table, waiting, unseen
            )
            return inputs, arrow_checks.evaluate(
                inputs, settings, target.topics, snapshot, mode, now_ms, options
            )

    # The table's bucket digests are the run's one pass over a slice of the table (all of it,
    # up to reconcile_watch_rows rows): the database computes them on a connection of its own
    # (SQLite's in a process of its own, whose hash calls need not wait for this interpreter's
    # lock: table_buckets.bucket_digests) while Spark reads the new records and checks what
    # they touch. The boards whose rows changed unasked (table_watch.suspects) are almost always
    # none, or already among the keys, whose closure is then the same: only when they add a
    # board are the checks run again.
    with ThreadPoolExecutor(1, thread_name_prefix="bucket-digests") as pool:
        table_look = pool.submit(
            _look, connection.engine, store, target.table, settings.reconcile_watch_rows
        )
        with phase("reconcile: the new records"):
            new, snapshot = read_new(spark, settings, target, snapshot, cursor)
        found_unseen = expired.new_unseen(target, cursor, snapshot.earliest)
        unseen = expired.describe([*store.ledger.unseen(connection), *found_unseen])
        waiting = readers.pending(
            spark, target.layout, join_checkpoint, snapshot.join.batch_id
        ).toArrow()
        relations = lookups(connection, store.ledger, new)
        with phase("reconcile: the keys to re-check"):
            seeded = seeds(new, carried(connection, store, target, snapshot, waiting))
            keys = affected.close(seeded, *relations)
        inputs, found = checked(keys)
        with phase("reconcile: the boards whose rows changed"):
            seen = table_look.result()
            changed = store.watch.suspects(connection, target.table, seeded.boards, seen)
    if not changed <= keys.boards:
        log.info(
            "%d boards whose rows changed unasked: the checks again with them",
            len(changed - keys.boards),
        )
        keys = affected.close(keys | Keys.of((), changed), *relations)
        inputs, found = checked(keys)
    return Checked(
        keys,
        found,
        cursor,
        snapshot.latest,
        new,
        found_unseen,
        seen,
        readers.table_keys(inputs.table_read, target.layout),
        pc.sum(pc.is_in(found["kind"], pa.array(checks.TABLE_ROWS))).as_py() or 0,
        arrow_checks.waiting_now(waiting, now_ms, options),
        covered(cursor, snapshot.latest),
        seen.as_json(),
        target.table,
    )


def store(connection: Connection, into: Store, checked: Checked, wait_s: float) -> None:
    """In the caller's transaction, short: the facts of ``checked``'s keys in place of the old
    ones, the re-checked boards' rows remembered, the new records added to the ledger and its
    cursor moved to the snapshot's end. The ledger is held first (:meth:`DigestLedger.lock`,
    waiting up to ``wait_s``); a cursor moved since the run read it (another run stored
    meanwhile) refuses the run rather than store a difference against a stale ledger."""
    into.ledger.lock(connection, wait_s)
    if into.ledger.cursor(connection) != checked.cursor:
        raise BoardstreamError(
            "another reconciliation stored its checks while this one ran: its checks are "
            "against a ledger that has changed since, and are not stored (the next run checks "
            "this data)"
        )
    with phase("reconcile: the facts, the rows as checked and the ledger"):
        into.ledger.add_unseen(connection, checked.found_unseen)
        into.facts.replace(connection, checked.keys, checked.found)
        into.watch.remember(connection, checked.table, checked.keys.boards)
        into.watch.advance(connection, checked.seen.within)
        baseline.record(connection, into.ledger, checked.new, checked.latest)
    log.info(
        "incremental run: %d positions and %d boards re-checked, %d new source records",
        len(checked.keys.positions),
        len(checked.keys.boards),
        checked.new.sources.num_rows,
    )
