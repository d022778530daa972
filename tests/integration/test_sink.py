"""The sink against a real broker, Spark and database: a record the table cannot take, or the
database refuses, becomes a dead letter naming the column and problem; the rest of its batch
is loaded; connection trouble still fails the batch so Spark retries it; a board's older
version written to board-detail after a newer one does not replace it; an input that aged out
before the sink read it is one line naming what was lost."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sqlite3
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from confluent_kafka import TopicPartition
from sqlalchemy.exc import OperationalError

from boardstream import sink
from boardstream.dead_letters import envelope, envelope_json
from boardstream.kafka.clients import admin_client
from boardstream.sink import table
from boardstream.sink.job import BatchWriter, SinkJobConfig
from boardstream.spark import streaming
from tests.pipeline import Pipeline, query

REJECTED_TITLE = "refused by the database"


def detail(board_id: str, **fields: object) -> bytes:
    record = {
        "board_id": board_id,
        "member_id": 1,
        "nickname": "n",
        "title": "t",
        "body": "b",
        "created_ts": 1,
        "board_partition": 0,
        "board_offset": 0,
    }
    return json.dumps(record | fields).encode()


def with_check_constraint(url: str) -> None:
    """The table plus a constraint the sink knows nothing of: the database's own refusal."""
    engine = sa.create_engine(url)
    check = f"title IS NULL OR title <> '{REJECTED_TITLE}'"
    if engine.dialect.name == "sqlite":
        metadata = sa.MetaData()
        copy = table.board_detail.to_metadata(metadata)
        copy.append_constraint(sa.CheckConstraint(check, name="refuse_some"))
        metadata.create_all(engine)
    else:
        table.create(engine)
        with engine.begin() as connection:
            connection.execute(
                sa.text("ALTER TABLE board_detail DROP CONSTRAINT IF EXISTS refuse_some")
            )
            connection.execute(
                sa.text(f"ALTER TABLE board_detail ADD CONSTRAINT refuse_some CHECK ({check})")
            )
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def pipeline(request, kafka, spark, tmp_path) -> Pipeline:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'sink.db'}"
    else:
        url = request.getfixturevalue("postgres").database_url
    with_check_constraint(url)
    return Pipeline(kafka, spark, tmp_path, database_url=url)


def test_rows_the_table_or_database_refuse_are_dead_lettered_and_the_rest_loaded(
    pipeline,
) -> None:
    prefix = pipeline.settings.board_topic
    good, refused, too_long, nul = f"{prefix}-good", f"{prefix}-db", "x" * 65, f"{prefix}-nul"
    records = [
        (good.encode(), detail(good)),
        (refused.encode(), detail(refused, title=REJECTED_TITLE)),
        (too_long.encode(), detail(too_long)),
        (b"no-member", detail("no-member", member_id=None)),
        (nul.encode(), detail(nul, body="a\u0000b")),
        (b"not-json", b"{oops"),
        (f"{prefix}-good2".encode(), detail(f"{prefix}-good2")),
    ]
    for at, (key, value) in enumerate(records):
        pipeline.send(pipeline.settings.board_detail_topic, key, value, 1_000 + at)
    pipeline.sink()

    sql = f"select board_id from board_detail where board_id like '{prefix}-%' order by 1"
    assert [row.board_id for row in query(pipeline.settings.database, sql)] == [
        good,
        f"{prefix}-good2",
    ]
    letters = {base64.b64decode(d["key_base64"]).decode(): d for d in pipeline.dead_letters()}
    errors = {key: letter["error"] for key, letter in letters.items()}
    database_error = errors.pop(refused)
    assert errors == {
        too_long: "board_detail.board_id is 65 characters, the column holds 64",
        "no-member": "board_detail.member_id is missing or null (NOT NULL)",
        nul: "board_detail.body contains U+0000, which text columns cannot hold",
        "not-json": "not a board_detail record (not a JSON object)",
    }
    assert database_error.startswith("database rejected the row: ")
    assert "refuse_some" in database_error or "CHECK constraint failed" in database_error
    value = detail(refused, title=REJECTED_TITLE)
    assert letters[refused]["value_sha256"] == hashlib.sha256(value).hexdigest()
    assert base64.b64decode(letters[refused]["value_base64"]) == value
    assert letters[refused]["source_topic"] == pipeline.settings.board_detail_topic
    assert (letters[refused]["value_bytes"], letters[refused]["truncated"]) == (len(value), False)

    pipeline.sink()  # nothing new: nothing loaded or dead-lettered twice
    assert len(pipeline.dead_letters()) == 5


def test_an_older_version_written_after_a_newer_one_does_not_replace_it(pipeline) -> None:
    """The join writes board-detail in member order, not in board's: v1 (board offset 7) waits
    for its member and is written after v2 (board offset 8). Each reaches the sink in a batch of
    its own, then the two again in one batch, then v2 replayed."""
    board_id = f"{pipeline.settings.board_topic}-moved"
    topic = pipeline.settings.board_detail_topic
    v1 = detail(board_id, title="v1", board_offset=7, member_id=2)
    v2 = detail(board_id, title="v2", board_offset=8, member_id=3)
    sql = (
        f"select title, board_offset, detail_offset from board_detail where board_id = '{board_id}'"
    )

    def loaded() -> list[tuple[str, int]]:
        return [(row.title, row.board_offset) for row in query(pipeline.settings.database, sql)]

    pipeline.send(topic, board_id.encode(), v2, 1_000)
    pipeline.sink()
    assert loaded() == [("v2", 8)]
    pipeline.send(topic, board_id.encode(), v1, 1_001)
    pipeline.sink()
    assert loaded() == [("v2", 8)]
    for at, value in enumerate((v1, v2, v1)):  # one batch: the newest of it, not the last
        pipeline.send(topic, board_id.encode(), value, 1_002 + at)
    pipeline.sink()
    assert loaded() == [("v2", 8)]
    (row,) = query(pipeline.settings.database, sql)
    assert row.detail_offset == 3  # the replayed v2: a copy of the version the row holds


def test_a_connection_error_fails_the_batch_instead_of_dead_lettering(tmp_path, kafka) -> None:
    path = tmp_path / "locked.db"
    settings = kafka.model_copy(update={"database_url": f"sqlite:///{path}?timeout=0.2"})
    writer = BatchWriter(settings)
    row = {c: None for c in table.COLUMNS} | {
        "board_id": "b",
        "member_id": 1,
        "detail_partition": 0,
        "detail_offset": 0,
    }
    locker = sqlite3.connect(path)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(OperationalError, match="database is locked"):
            writer.upsert_isolating([row])
    finally:
        locker.rollback()
        locker.close()
    assert writer.upsert_isolating([row]) == {}


@pytest.mark.parametrize(
    ("key", "value", "error"),
    [
        (b"k", b'{"a": "\xc3\xa9"}', 'quote " backslash \\ newline \n tab \t bell \x07 é 😀'),
        (None, b"v" * 40, "truncated value"),
        (b"k" * 40, None, "truncated key, no value"),
        (None, None, "x" * 2_500),
    ],
)
def test_the_python_envelope_is_byte_identical_to_the_spark_one(spark, key, value, error) -> None:
    prefix = 16
    now = datetime.now(UTC)
    frame = spark.createDataFrame(
        [(error, "board-detail", 2, 7, 1234, key, value, now)],
        "e string, topic string, partition int, offset bigint, timestamp_ms bigint, "
        "key binary, value binary, timestamp timestamp",
    )
    [(from_spark,)] = frame.select(envelope(frame["e"], prefix)).collect()
    assert from_spark == envelope_json(error, "board-detail", 2, 7, 1234, key, value, prefix)


def test_a_sink_whose_input_aged_out_names_what_was_lost_in_one_line(
    kafka, spark, tmp_path
) -> None:
    pipeline = Pipeline(kafka, spark, tmp_path)
    settings, topic = pipeline.settings, pipeline.settings.board_detail_topic
    config = SinkJobConfig(checkpoint=tmp_path / "sink-ckpt")

    def produce(*board_ids: str) -> None:
        for board_id in board_ids:
            pipeline.producer.produce(topic, detail(board_id), board_id.encode(), partition=0)
        assert pipeline.producer.flush(10) == 0

    def run() -> None:
        streaming.run(spark, settings, lambda: sink.start(spark, settings, config), config)

    produce("b0", "b1")
    run()  # offsets 0 and 1 loaded, the checkpoint at 2
    produce("b2", "b3", "b4")
    # Retention's effect, at once: offsets 2 and 3 deleted before the sink read them.
    admin = admin_client(settings)  # kept: a client collected leaves its futures unresolved
    for future in admin.delete_records([TopicPartition(topic, 0, 4)]).values():
        future.result(timeout=30)
    with pytest.raises(streaming.InputLostError) as lost:
        run()
    message = str(lost.value)
    assert "\n" not in message, message
    assert re.fullmatch(
        rf"board-detail-sink: records of its input were deleted before it read them: .*"
        rf"{re.escape(topic)}-0.* \(KAFKA_DATA_LOSS\.[A-Z_]+\); the reconciliation's verdict "
        r"names them",
        message,
    ), message
    assert {
        row.board_id for row in query(settings.database, "SELECT board_id FROM board_detail")
    } == {
        "b0",
        "b1",
    }
