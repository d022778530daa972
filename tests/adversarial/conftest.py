"""The adversarial suite's pipelines (see docs/RELIABILITY.md, "The adversarial suite")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from boardstream.reconcile.evidence.run_ledger import FULL
from boardstream.sink import table as sink_table
from tests.adversarial.world import NOW, board, execute, reconcile_as
from tests.fixtures import new_database
from tests.pipeline import Pipeline

BOARDS = [f"b{i}" for i in range(1, 9)]


def populate(pipeline: Pipeline) -> None:
    """Members 1-5; boards b1-b8 joined; ``ctl`` whose title holds a control character;
    ``upd`` posted twice (two board-detail records); ``waits`` for a member that never comes;
    one malformed board."""
    for member_id in range(1, 6):
        pipeline.member(member_id, f"m{member_id}", ts=NOW)
    for i, board_id in enumerate(BOARDS):
        board(pipeline, board_id, i % 5 + 1, NOW + 1 + i)
    board(pipeline, "ctl", 1, NOW + 20, title="a\u0001b", body="c")
    board(pipeline, "upd", 2, NOW + 21, title="v1")
    board(pipeline, "upd", 2, NOW + 22, title="v2")
    board(pipeline, "waits", 99, NOW + 23)
    pipeline.send(pipeline.settings.board_topic, b"bad", b"{not json", NOW + 24)


@pytest.fixture(scope="module")
def table_world(kafka, spark, postgres, tmp_path_factory, request) -> Iterator[Pipeline]:
    """One pipeline whose table every test may tamper with; restored after each test. Its
    full runs check in Spark, as a large one does (the other worlds' in DuckDB, as a small
    one does), so each tampering of the table is caught by both engines: Spark's full run and
    DuckDB's incremental one (:func:`.world.reconcile`)."""
    workdir = tmp_path_factory.mktemp("table-world")
    url = new_database(postgres, request)
    pipeline = Pipeline(
        kafka,
        spark,
        workdir,
        var_dir=workdir,
        database_url=url,
        reconcile_in_process_max_records=0,
    )
    populate(pipeline)
    pipeline.join()
    pipeline.sink()
    execute(url, "CREATE TABLE board_detail_pristine AS SELECT * FROM board_detail")
    reconcile_as(pipeline, FULL)  # the incremental runs' baseline
    yield pipeline


@pytest.fixture
def world(table_world: Pipeline) -> Iterator[Pipeline]:
    """The table world, its table put back exactly as the sink left it afterwards (whatever
    the test did to its rows, types or constraints)."""
    yield table_world
    url = table_world.settings.database
    execute(url, "DROP TABLE board_detail")
    engine = sa.create_engine(url)
    sink_table.create(engine)
    engine.dispose()
    execute(url, "INSERT INTO board_detail SELECT * FROM board_detail_pristine")


def fresh_pipeline(kafka, spark, postgres, workdir, request) -> Pipeline:
    """A populated pipeline, joined, loaded and reconciled once (the incremental runs'
    baseline), in ``workdir`` and a database of its own."""
    url = new_database(postgres, request)
    pipeline = Pipeline(kafka, spark, workdir, var_dir=workdir, database_url=url)
    populate(pipeline)
    pipeline.join()
    pipeline.sink()
    reconcile_as(pipeline, FULL)
    return pipeline


@pytest.fixture
def fresh(kafka, spark, postgres, tmp_path, request) -> Pipeline:
    """A pipeline of its own, for tampering with topics (records cannot be taken back)."""
    return fresh_pipeline(kafka, spark, postgres, tmp_path, request)
