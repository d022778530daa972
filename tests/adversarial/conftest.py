"""The adversarial suite's pipelines (see docs/RELIABILITY.md, "The adversarial suite")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from boardstream.joins.topics import SHIPPED_PIPELINE
from boardstream.reconcile.evidence.run_ledger import FULL
from tests.adversarial.world import NOW, execute, reconcile_as, text_pair
from tests.fixtures import new_database
from tests.pipeline import Pipeline

BOARDS = [f"b{i}" for i in range(1, 9)]
CONTROL = "a\u0001b"  # a text holding a control character, which a digest might read as a separator


def populate(pipeline: Pipeline) -> None:
    """Rows 1-5; records b1-b8 joined; ``ctl`` whose row holds a control character in the
    second column of :func:`.world.text_pair`; ``upd`` posted twice (two joined records);
    ``waits`` for a row that never comes; one malformed record. Every other field is drawn
    from its declared type, so the same data set is any pipeline's."""
    for row in range(1, 6):
        pipeline.send_row(row, NOW)
    for i, record_id in enumerate(BOARDS):
        pipeline.send_record(record_id, i % 5 + 1, NOW + 1 + i)
    (side, field), ctl_row = text_pair(pipeline)[1], 6
    if side == "table":
        pipeline.send_row(ctl_row, NOW, **{field: CONTROL})
        pipeline.send_record("ctl", ctl_row, NOW + 20)
    else:
        pipeline.send_record("ctl", 1, NOW + 20, **{field: CONTROL})
    pipeline.send_record("upd", 2, NOW + 21)
    pipeline.send_record("upd", 2, NOW + 22)
    pipeline.send_record("waits", 99, NOW + 23)
    pipeline.send(pipeline.topics.stream, b"bad", b"{not json", NOW + 24)


@pytest.fixture(scope="module", params=[SHIPPED_PIPELINE, "orders"])
def table_world(kafka, spark, postgres, tmp_path_factory, request) -> Iterator[Pipeline]:
    """One pipeline per shipped declaration whose table every test may tamper with; restored
    after each test. Its full runs check in Spark, as a large one does (the other worlds' in
    DuckDB, as a small one does), so each tampering of the table is caught by both engines:
    Spark's full run and DuckDB's incremental one (:func:`.world.reconcile`)."""
    workdir = tmp_path_factory.mktemp("table-world")
    url = new_database(postgres, request)
    pipeline = Pipeline(
        kafka,
        spark,
        workdir,
        declared=request.param,
        var_dir=workdir,
        database_url=url,
        reconcile_in_process_max_records=0,
    )
    populate(pipeline)
    pipeline.join()
    pipeline.sink()
    table = pipeline.table.table.name
    execute(url, f"CREATE TABLE pristine AS SELECT * FROM {table}")
    reconcile_as(pipeline, FULL)  # the incremental runs' baseline
    yield pipeline


@pytest.fixture
def world(table_world: Pipeline) -> Iterator[Pipeline]:
    """The table world, its table put back exactly as the sink left it afterwards (whatever
    the test did to its rows, types or constraints)."""
    yield table_world
    url = table_world.settings.database
    table = table_world.table
    execute(url, f"DROP TABLE {table.table.name}")
    engine = sa.create_engine(url)
    table.create(engine)
    engine.dispose()
    execute(url, f"INSERT INTO {table.table.name} SELECT * FROM pristine")


def fresh_pipeline(
    kafka, spark, postgres, workdir, request, declared: str = SHIPPED_PIPELINE
) -> Pipeline:
    """A populated pipeline of the shipped declaration ``declared``, joined, loaded and
    reconciled once (the incremental runs' baseline), in ``workdir`` and a database of its
    own."""
    url = new_database(postgres, request)
    pipeline = Pipeline(kafka, spark, workdir, declared=declared, var_dir=workdir, database_url=url)
    populate(pipeline)
    pipeline.join()
    pipeline.sink()
    reconcile_as(pipeline, FULL)
    return pipeline


@pytest.fixture
def fresh(kafka, spark, postgres, tmp_path, request) -> Pipeline:
    """A pipeline of its own, for tampering with topics (records cannot be taken back)."""
    return fresh_pipeline(kafka, spark, postgres, tmp_path, request)
