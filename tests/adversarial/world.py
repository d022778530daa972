"""Small real pipelines for the adversarial suite: known data, joined and loaded, with helpers to
tamper with what a reconciliation reads and to reconcile exactly as production does."""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

import sqlalchemy as sa
from confluent_kafka import Consumer, Producer, TopicPartition

from boardstream.reconcile.checks.spark_checks import FAILING, ReconcileOptions
from boardstream.reconcile.evidence.run_ledger import FULL, INCREMENTAL
from boardstream.reconcile.run import RunResult, reconcile_once
from boardstream.settings import Settings
from boardstream.sink import table as sink_table
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
    settings = pipeline.settings
    return reconcile_once(
        pipeline.spark,
        settings,
        "adversarial",
        join_checkpoint=pipeline.workdir / f"{settings.board_topic}-join",
        sink_checkpoint=pipeline.workdir / f"{settings.board_topic}-sink",
        options=ReconcileOptions(**options),
        kind=kind,
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


def detail_records(settings: Settings, board_id: str) -> list[dict[str, Any]]:
    """Every board-detail record of ``board_id``, oldest first, each as the table row it
    loads into (with its own partition and offset)."""
    return [
        {**json.loads(value), "detail_partition": p, "detail_offset": offset}
        for p, offset, value in records_of(settings, settings.board_detail_topic, board_id)
    ]


def load_row(settings: Settings, record: dict[str, Any]) -> None:
    """``record`` (a :func:`detail_records` entry) as its board's row, exactly as the sink
    would have loaded it, in place of the row the board has."""
    engine = sa.create_engine(settings.database)
    table = sink_table.board_detail
    with engine.begin() as connection:
        connection.execute(table.delete().where(table.c.board_id == record["board_id"]))
        connection.execute(table.insert().values({c: record[c] for c in sink_table.COLUMNS}))
    engine.dispose()


def source_position(settings: Settings, board_id: str) -> tuple[int, int]:
    """Where the newest board record of ``board_id`` is in the board topic."""
    p, offset, _ = records_of(settings, settings.board_topic, board_id)[-1]
    return p, offset
