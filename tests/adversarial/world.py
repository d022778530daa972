"""Small real pipelines for the adversarial suite: known data, joined and loaded, with helpers to
tamper with what a reconciliation reads and to reconcile exactly as production does."""

from __future__ import annotations

import itertools
import json
import re
import time
import uuid
from typing import Any

import sqlalchemy as sa
from confluent_kafka import Consumer, Producer, TopicPartition

from boardstream.pipelines import POSITIONS
from boardstream.reconcile.checks.spark_checks import FAILING, ReconcileOptions
from boardstream.reconcile.evidence.run_ledger import FULL, INCREMENTAL
from boardstream.reconcile.run import RunResult, reconcile_once
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import Settings
from boardstream.sink.ddl import kept_column
from tests.pipeline import Pipeline

NOW = int(time.time() * 1000)


def board(pipeline: Pipeline, board_id: str, member_id: int, ts: int, **fields: Any) -> None:
    payload = {
        "id": board_id,
        "member_id": member_id,
        "title": f"title {board_id}",
        "body": "body",
        "created_ts": ts,
        "created_at": "2025-01-02T00:00:00",
        "modified_at": "2025-01-02T00:00:00",
        **fields,
    }
    topic = pipeline.settings.board_topic
    pipeline.send(topic, board_id.encode(), json.dumps(payload).encode(), ts)


def reconcile(pipeline: Pipeline, **options: Any) -> RunResult:
    """An incremental run and a full one of the same state (#22): both must give the same
    verdict, counts, findings and balance. Returns the incremental run's result. The pipelines
    that tamper run a full one first (their fixtures), so the incremental run finds the
    tampering as new data or changed rows; elsewhere the first run, with no ledger yet, is the
    full one, and the incremental one follows it."""
    first = reconcile_as(pipeline, INCREMENTAL, **options)
    second = reconcile_as(pipeline, FULL if first.kind == INCREMENTAL else INCREMENTAL, **options)
    incremental, full = (first, second) if first.kind == INCREMENTAL else (second, first)
    assert (incremental.kind, full.kind) == (INCREMENTAL, FULL)
    assert verdict(incremental) == verdict(full), "\n".join(
        ["incremental:", *incremental.summary(), "full:", *full.summary()]
    )
    return incremental


def reconcile_as(pipeline: Pipeline, kind: str, **options: Any) -> RunResult:
    return reconcile_once(
        pipeline.spark,
        pipeline.settings,
        "adversarial",
        join_checkpoint=pipeline.checkpoint("join"),
        sink_checkpoint=pipeline.checkpoint("sink"),
        options=ReconcileOptions(**options),
        kind=kind,
        target=None if pipeline.shipped else ReconcileTarget.of(pipeline.deployed),
    )


def verdict(result: RunResult) -> tuple:
    """What two runs of one state must agree on: the verdict, every count and finding (with
    its ids), the balance."""
    found = result.reconciliation
    stalled = found.findings["stalled"]
    return (
        result.passed,
        found.counts,
        {k: (f.count, f.examples) for k, f in found.findings.items() if k != "stalled"},
        # how long a job has stalled is measured at each run
        [re.sub(r" for \S+$", "", line) for line in stalled.examples],
        found.balance,
    )


def failures(result: RunResult) -> dict[str, list[str]]:
    """The failing findings of a run, with their ids."""
    return {
        kind: finding.examples
        for kind, finding in result.reconciliation.findings.items()
        if finding.count and kind in FAILING
    }


def execute(database_url: str, *statements: str, **params: Any) -> None:
    engine = sa.create_engine(database_url)
    with engine.begin() as connection:
        for statement in statements:
            connection.execute(sa.text(statement), params)
    engine.dispose()


def rows(database_url: str, sql: str, **params: Any) -> list[Any]:
    engine = sa.create_engine(database_url)
    with engine.connect() as connection:
        found = connection.execute(sa.text(sql), params).all()
    engine.dispose()
    return found


def forge(settings: Settings, topic: str, key: bytes | None, value: dict | bytes) -> None:
    """Write a record into one of the pipeline's topics as another job (or a person) might."""
    producer = Producer(settings.to_confluent())
    payload = value if isinstance(value, bytes) else json.dumps(value).encode()
    producer.produce(topic, key=key, value=payload)
    assert producer.flush(10) == 0


def records_of(settings: Settings, topic: str, key: str) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of every record of ``topic`` with ``key``, oldest first."""
    consumer = Consumer(
        {
            **settings.to_confluent(),
            "group.id": f"adv-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    found = []
    for p in consumer.list_topics(topic, timeout=10).topics[topic].partitions:
        end = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
        if not end:
            continue
        consumer.assign([TopicPartition(topic, p, 0)])
        offset = -1
        while offset < end - 1:
            message = consumer.poll(5)
            assert message is not None and message.error() is None
            offset = message.offset()
            if message.key() == key.encode():
                found.append((p, offset, message.value()))
    consumer.close()
    assert found, f"no record of {key} in {topic}"
    return found


def detail_records(pipeline: Pipeline, record_id: str) -> list[dict[str, Any]]:
    """Every joined record of ``record_id``, oldest first, each as the table row it loads into
    (with its own partition and offset)."""
    partition, offset = (column(pipeline, f"joined.{p}") for p in POSITIONS)
    return [
        {**json.loads(value), partition: p, offset: at}
        for p, at, value in records_of(pipeline.settings, pipeline.topics.joined, record_id)
    ]


def load_row(pipeline: Pipeline, record: dict[str, Any]) -> None:
    """``record`` (a :func:`detail_records` entry) as its row, exactly as the sink would have
    loaded it, in place of the row the record's id has."""
    engine = sa.create_engine(pipeline.settings.database)
    target = pipeline.table
    table, key = target.table, target.key
    with engine.begin() as connection:
        connection.execute(table.delete().where(table.c[key] == record[key]))
        connection.execute(table.insert().values({c: record.get(c) for c in target.columns}))
    engine.dispose()


# -- the columns a tampering aims at, found from the declaration ------------------------------


def column(pipeline: Pipeline, source: str) -> str:
    """The sink column keeping ``source`` (``stream.FIELD``, ``joined.ROWOFFSET``...)."""
    return kept_column(pipeline.deployed.pipeline, source)


def _sources(pipeline: Pipeline) -> list[tuple[str, str, str]]:
    """(column, side, field) of every column the sink keeps, in the table's order."""
    return [
        (name, *source.split(".", 1))
        for name, source in pipeline.deployed.pipeline.sink.columns.items()
    ]


def free_texts(pipeline: Pipeline) -> list[str]:
    """The text columns kept from a field that is content alone: not the id, the key or its
    reference, a time or a position (what a person editing a row would change)."""
    declared = pipeline.deployed.pipeline
    stream, table = declared.stream, declared.table
    roles = {
        ("stream", stream.id), ("stream", stream.join_on), ("stream", stream.event_time),
        ("table", table.key), ("table", table.version_time),
    }  # fmt: skip
    text = [c.name for c in pipeline.table.table.columns if isinstance(c.type, sa.String)]
    return [
        name for name, *source in _sources(pipeline) if name in text and tuple(source) not in roles
    ]


def text_pair(pipeline: Pipeline) -> tuple[str, tuple[str, str]]:
    """Two neighbouring text columns, the second of content alone, as (the first column,
    (side, field) of the second): what moving text across a control character between two
    columns would try to pass off as the same row."""
    text = {c.name for c in pipeline.table.table.columns if isinstance(c.type, sa.String)}
    sources = _sources(pipeline)
    free = free_texts(pipeline)
    return next(
        (first[0], (second[1], second[2]))
        for first, second in itertools.pairwise(sources)
        if first[0] in text and second[0] in free
    )


def content_column(pipeline: Pipeline, side: str) -> str:
    """The first column kept from a ``side`` (stream or table) field of content alone: what a
    forger would change in a joined record."""
    declared = pipeline.deployed.pipeline
    roles = {declared.stream.id, declared.stream.join_on, declared.stream.event_time}
    if side == "table":
        roles = {declared.table.key, declared.table.version_time}
    return next(
        name
        for name, of, field in _sources(pipeline)
        if of == side and field not in roles and field not in POSITIONS
    )


def as_source_gave(
    pipeline: Pipeline, joined: dict[str, Any], side: str, source: dict[str, Any]
) -> dict[str, Any]:
    """``joined`` (a joined record) with every field it keeps from ``side`` (stream or table)
    as the ``source`` record of that side has it: left out where the source has none, as the
    join leaves out a null."""
    forged = dict(joined)
    for name, of, field in _sources(pipeline):
        if of != side or field in POSITIONS:
            continue
        if field in source:
            forged[name] = source[field]
        else:
            forged.pop(name, None)
    return forged


def altered(value: Any) -> Any:
    """Another value of ``value``'s JSON type (a missing text becomes one)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    return "x" if value != "x" else "y"


def without_position(pipeline: Pipeline, record: dict[str, Any]) -> dict[str, Any]:
    """A :func:`detail_records` entry as its topic holds it: without its own position."""
    own = {column(pipeline, f"joined.{p}") for p in POSITIONS}
    return {k: v for k, v in record.items() if k not in own}


def dead_letter(pipeline: Pipeline, partition: int, offset: int) -> dict[str, Any]:
    """A dead letter, as another job might write one, for the stream record at a position."""
    return {
        "error": "forged by another job",
        "source_topic": pipeline.topics.stream,
        "partition": partition,
        "offset": offset,
    }


def integer_column(pipeline: Pipeline) -> str:
    """The first integer column that is not a position."""
    positions = {name for name, _, field in _sources(pipeline) if field in POSITIONS}
    return next(
        c.name
        for c in pipeline.table.table.columns
        if isinstance(c.type, sa.BigInteger) and c.name not in positions
    )


def source_position(settings: Settings, board_id: str) -> tuple[int, int]:
    """Where the newest board record of ``board_id`` is in the board topic."""
    p, offset, _ = records_of(settings, settings.board_topic, board_id)[-1]
    return p, offset
