"""The sink's pure side: the record schema it parses ``board-detail`` with, its query's name and
defaults, and how its writer isolates the rows a real (SQLite) database refuses: every good row
is written, each refused one is returned by position with the database's reason (for the DLQ),
and an error that is not about the data fails the batch. Parsing Kafka rows and producing dead
letters needs Spark and a broker: tests/integration/test_sink.py covers them."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from boardstream.dead_letters import envelope_json
from boardstream.joins.schema import ddl
from boardstream.pipelines import shipped
from boardstream.settings import Settings
from boardstream.sink import job, table
from boardstream.sink.job import QUERY_NAME, BatchWriter, SinkJobConfig, SinkTarget, _named
from tests.fixtures import detail_row

NOT_NULL = "database rejected the row: NOT NULL constraint failed: board_detail.member_id"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        var_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'boardstream.db'}",
        checkpoint_root=tmp_path / "checkpoints",
    )


def _table(writer: BatchWriter) -> list[tuple[str, int]]:
    c = table.board_detail.c
    with writer.engine.connect() as connection:
        query = sa.select(c.board_id, c.detail_offset).order_by(c.board_id)
        return [tuple(row) for row in connection.execute(query)]


def test_the_record_schema_is_the_joins_output_without_its_outcome(settings: Settings) -> None:
    target = SinkTarget.shipped(settings)
    assert (target.joined, target.dead_letters) == ("board-detail", "board-dlq")
    assert target.loaded_from == ("detail_partition", "detail_offset")
    assert ddl(target.record) == (
        "`reason` string, `board_id` string, `member_id` bigint, `nickname` string, "
        "`city` string, `phone` string, `title` string, `body` string, `created_ts` bigint, "
        "`created_at` string, `modified_at` string, `member_modified_at` string, "
        "`board_partition` int, `board_offset` bigint, `board_timestamp_ms` bigint, "
        "`member_partition` int, `member_offset` bigint"
    )


def test_another_pipelines_records_and_positions_follow_its_declaration() -> None:
    target = SinkTarget.declared(shipped("orders"))
    assert (target.joined, target.dead_letters) == ("orders-joined", "orders-dlq")
    assert ddl(target.record) == (
        "`reason` string, `order_id` string, `customer_id` string, `customer_name` string, "
        "`amount` decimal(12,2), `credit_limit` decimal(14,2), `vip` boolean, "
        "`customer_since` date, `gift` boolean, `placed_at` bigint, `stream_partition` int, "
        "`stream_offset` bigint, `stream_timestamp_ms` bigint, `table_partition` int, "
        "`table_offset` bigint"
    )
    assert target.loaded_from == ("joined_partition", "joined_offset")
    assert (target.table.table.name, target.table.key) == ("order_customer", "order_id")


def test_the_query_name_bounded_batches_and_default_checkpoint(settings: Settings) -> None:
    config = SinkJobConfig()
    assert (QUERY_NAME, config.query_name) == ("board-detail-sink", "board-detail-sink")
    assert config.max_offsets_per_trigger == 100_000
    assert config.checkpoint_dir(settings) == f"{settings.checkpoint_root}/{QUERY_NAME}"
    assert SinkJobConfig(checkpoint=Path("/cp")).checkpoint_dir(settings) == "file:///cp"
    assert SinkJobConfig(query="orders-sink").checkpoint_dir(settings).endswith("/orders-sink")


def test_the_writer_creates_the_table(settings: Settings) -> None:
    writer = BatchWriter(settings)
    assert sa.inspect(writer.engine).has_table("board_detail")
    assert _table(writer) == []


def test_a_batch_the_database_takes_is_written_whole(settings: Settings) -> None:
    writer = BatchWriter(settings)
    assert (
        writer.upsert_isolating([detail_row("b1", 1), detail_row("b2", 2), detail_row("b1", 3)])
        == {}
    )
    assert _table(writer) == [("b1", 3), ("b2", 2)]
    assert writer.upsert_isolating([]) == {}


def test_a_batch_is_written_a_bounded_number_of_rows_to_a_transaction(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's one write lock is held per transaction: a batch of 100,000 rows in one held it
    past the lease's silence bound (#67)."""
    monkeypatch.setattr(job, "WRITE_ROWS", 2)
    writer = BatchWriter(settings)
    commits: list[object] = []
    sa.event.listen(writer.engine, "commit", commits.append)
    assert writer.write([detail_row(f"b{n}", n) for n in (4, 0, 3, 1, 2)]) == {}
    assert len(commits) == 3  # b0 b1 | b2 b3 | b4
    assert _table(writer) == [(f"b{n}", n) for n in range(5)]


def test_refused_rows_are_isolated_and_every_good_row_written(settings: Settings) -> None:
    writer = BatchWriter(settings)
    rows = [detail_row(f"b{n}", n, None if n in (2, 5) else 7) for n in range(7)]
    assert writer.upsert_isolating(rows) == {(0, 2): NOT_NULL, (0, 5): NOT_NULL}
    assert _table(writer) == [("b0", 0), ("b1", 1), ("b3", 3), ("b4", 4), ("b6", 6)]


def test_a_single_refuseddetail_row(settings: Settings) -> None:
    writer = BatchWriter(settings)
    assert writer.upsert_isolating([detail_row("b1", 4, None)]) == {(0, 4): NOT_NULL}
    assert _table(writer) == []


def test_only_a_boards_newest_copy_is_tried(settings: Settings) -> None:
    """The newest copy is the one refused; the older one is not written in its place."""
    writer = BatchWriter(settings)
    rows = [detail_row("b1", 1), detail_row("b1", 3, None), detail_row("b2", 2)]
    assert writer.upsert_isolating(rows) == {(0, 3): NOT_NULL}
    assert _table(writer) == [("b2", 2)]


def test_an_error_that_is_not_the_datas_fails_the_batch(settings: Settings) -> None:
    writer = BatchWriter(settings)
    table.board_detail.drop(writer.engine)
    with pytest.raises(sa.exc.OperationalError, match="no such table: board_detail"):
        writer.upsert_isolating([detail_row("b1", 1)])


def test_nothing_refused_reads_nothing_back(settings: Settings) -> None:
    """No batch is touched (None would fail at the first look) when the database took all."""
    assert BatchWriter(settings)._database_letters(None, {}) == []  # type: ignore[arg-type]


def test_a_dead_letter_is_named_by_its_records_position() -> None:
    letter = envelope_json("bad", "board-detail", 2, 17, 1_000, b"k", b"v", 16)
    assert _named(letter) == "board-detail[2]@17"
