"""Any declaration the model accepts, drawn: its field names and types from the documented set
(text with bounds, int64, double, decimal, boolean, timestamp in each form, date; required or
not), a text or int64 key, a latest or as-of join, and a small data set of it from the
generator with every join case. Through the join's own parser and its operator's per-key logic
(in batch, as repair joins: no broker, no checkpoint), every record ends where its kind in the
manifest says: joined, unmatched for a row never produced or deleted, or a dead letter. A
field the generator writes that the parser refuses, or an operator that loses or misplaces a
record, fails here with the declaration that shows it. And the reconciliation's balance of the
join's outputs (its readers and its checks' one query, in process) is the manifest's: every
record read, each in one outcome."""

from __future__ import annotations

import base64
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from boardstream.generator.plan import STREAM, GeneratorOptions, Plan
from boardstream.joins import jvm_operator
from boardstream.joins.job import kafka_rows
from boardstream.joins.layout import JoinLayout
from boardstream.joins.member_table import JoinOptions
from boardstream.joins.parse import parse_declared, routed_declared
from boardstream.joins.schema import Contract
from boardstream.joins.topics import Deployed, JoinTopics
from boardstream.pipelines import Int64, Pipeline, shipped
from boardstream.reconcile.checks import spark_checks
from boardstream.reconcile.checks.spark_checks import CheckInputs, ReconcileOptions
from boardstream.reconcile.reads import readers
from boardstream.reconcile.reads.expired import EXPIRED
from boardstream.reconcile.reads.readers import KAFKA_COLUMNS, TableRead
from boardstream.reconcile.reads.snapshot import JobProgress, Snapshot
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import Settings

OPTIONS = dict(members=6, boards=14, update_ratio=0.5, deletes=1, late_members=1, orphans=2)
MALFORMED = 5  # one of each flaw
RAW = (
    "key binary, value binary, topic string, `partition` int, `offset` bigint, timestamp timestamp"
)
MAX_RECORD_BYTES = 256 * 1024


def text(draw, key: bool = False) -> dict[str, Any]:
    """A text type; a key's long enough for the generator's keys and ids (``k<row>``, hex)."""
    low = draw(st.integers(0, 3))
    high = draw(st.one_of(st.none(), st.integers(8 if key else max(low, 1), 40)))
    kind: dict[str, Any] = {"type": "text", "min_chars": low}
    return kind if high is None else {**kind, "max_chars": high}


@st.composite
def field_type(draw) -> dict[str, Any]:
    name = draw(
        st.sampled_from(["text", "int64", "double", "decimal", "boolean", "timestamp", "date"])
    )
    kind: dict[str, Any]
    if name == "text":
        kind = text(draw)
    elif name == "decimal":
        precision = draw(st.integers(1, 20))
        kind = {"type": "decimal", "precision": precision, "scale": draw(st.integers(0, precision))}
    elif name == "timestamp":
        kind = {"type": "timestamp", "format": draw(st.sampled_from(FORMATS))}
    else:
        kind = {"type": name}
    return {**kind, "required": draw(st.booleans())}


FORMATS = ["iso8601", "epoch_ms", "epoch_us"]


@st.composite
def declarations(draw) -> Pipeline:
    key = draw(st.sampled_from(["text", "int64"]))
    key_type = text(draw, key=True) if key == "text" else {"type": "int64"}
    id_type = draw(st.sampled_from([text(draw, key=True), {"type": "int64"}]))
    timestamp = lambda: {"type": "timestamp", "format": draw(st.sampled_from(FORMATS))}  # noqa: E731
    extra = lambda prefix: {  # noqa: E731
        f"{prefix}{i}": draw(field_type()) for i in range(draw(st.integers(0, 3)))
    }
    stream_fields = {
        "rid": {**id_type, "required": True},
        "ref": {**key_type, "required": True},
        "at": {**timestamp(), "required": True},
        **extra("s"),
    }
    table_fields = {
        "pk": {**key_type, "required": True},
        "since": {**timestamp(), "required": True},
        **extra("t"),
    }
    columns = {"rid": "stream.rid", "ref": "stream.ref"}
    columns |= {f"c_{name}": f"stream.{name}" for name in stream_fields if name[0] == "s"}
    columns |= {f"c_{name}": f"table.{name}" for name in table_fields if name[0] == "t"}
    return Pipeline.model_validate(
        {
            "name": "drawn",
            "stream": {
                "topic": "drawn-stream",
                "id": "rid",
                "join_on": "ref",
                "event_time": "at",
                "fields": stream_fields,
            },
            "table": {
                "topic": "drawn-table",
                "key": "pk",
                "version_time": "since",
                "fields": table_fields,
            },
            "join": {"mode": draw(st.sampled_from(["latest", "as-of"]))},
            "sink": {"table": "drawn_rows", "columns": columns},
        }
    )


def outcomes(
    spark, pipeline: Pipeline, seed: int, withheld: frozenset[str] | set[str] = frozenset()
) -> tuple[dict[str, str], dict[str, str]]:
    """What the join made of the generated data set (id → outcome or reason; dead letters'
    keys), and what the manifest says it should; the records of the ``withheld`` kinds are
    not given to the join. Each record's Kafka time is its time on the generator's timeline."""
    topics = JoinTopics.declared(pipeline)
    options = GeneratorOptions(**OPTIONS, seed=seed, malformed=MALFORMED)
    plan = Plan(options, pipeline)
    expected: dict[str, str] = {}
    raw, offsets = [], {STREAM: 0, "table": 0}
    kinds = plan.kinds
    outcome = {
        kinds.records: "joined",
        kinds.late_records: "joined",
        kinds.orphans: "member_missing",
        kinds.of_deleted: "member_deleted",
    }
    for record in plan:
        topic = topics.stream if record.topic == STREAM else topics.table
        at = datetime.fromtimestamp(record.at_ms / 1000, UTC)
        if record.kind not in withheld:
            raw.append((record.key, record.value, topic, 0, offsets[record.topic], at))
        offsets[record.topic] += 1
        if record.topic == STREAM:
            expected[record.key.decode()] = outcome.get(record.kind, "dead_letter")
    contract, layout = Contract.of(pipeline), JoinLayout.of(pipeline)
    frame = spark.createDataFrame(raw, KAFKA_COLUMNS)
    routed = routed_declared(
        parse_declared(frame, contract, topics.stream, topics.table, MAX_RECORD_BYTES),
        pipeline,
        layout,
    )
    join_options = JoinOptions.of(pipeline.join, unmatched_timeout_ms=1)
    joined = jvm_operator.rejoin(routed, layout, join_options, 2_000_000_000_000).cache()
    actual = {}
    for row in joined.collect():
        if row["outcome"] == "dead_letter":
            actual[base64.b64decode(row["dead_key"]).decode()] = "dead_letter"
        else:
            actual[str(row[layout.id_column])] = row["reason"] or row["outcome"]
    outputs = [tuple(row) for row in kafka_rows(joined, topics, layout).collect()]
    joined.unpersist()
    return Outcomes(actual, expected, raw, outputs)


@dataclass(frozen=True)
class Outcomes:
    actual: dict[str, str]  # what the join made of each stream record: outcome or reason
    expected: dict[str, str]  # what the manifest says it should
    inputs: list[tuple]  # the stream's and the table's records, as Kafka rows
    outputs: list[tuple]  # the join's records (topic, key, value), as it writes them


def reconciled_balance(spark, pipeline: Pipeline, found: Outcomes, lost: int = 0) -> dict:
    """The reconciliation's balance of the join's outputs (every output record in its
    topic's order, partition 0; the first ``lost`` joined ones left out, as if lost on the
    way): the readers and the checks' one query of a full run, in process (DuckDB), with
    every record read by the join and the sink."""
    topics = JoinTopics.declared(pipeline)
    target = ReconcileTarget.of(Deployed.declared(pipeline))
    at = datetime.fromtimestamp(0, UTC)
    rows = list(found.inputs)
    written: dict[str, int] = {}
    for topic, key, value in found.outputs:
        offset = written.setdefault(topic, 0)
        written[topic] += 1
        if topic == topics.joined and offset < lost:
            continue
        rows.append(
            (key, value.encode() if isinstance(value, str) else value, topic, 0, offset, at)
        )
    raw = spark.createDataFrame(rows, KAFKA_COLUMNS)
    ends = {topic: {0: 0} for topic in target.read}
    for _, _, topic, _, offset, _ in rows:
        ends[topic][0] = max(ends[topic][0], offset + 1)
    for topic, count in written.items():
        ends[topic][0] = count
    frames = {topic: raw.where(F.col("topic") == topic) for topic in target.read}
    inputs = CheckInputs(
        sources=readers.sources(frames[topics.stream], target.layout),
        details=_unexpired(readers.details(frames[topics.joined], target.layout)),
        unmatched=_unexpired(readers.unmatched(frames[topics.unmatched], target.layout)),
        board_dead_letters=_unexpired(
            readers.dead_letters(frames[topics.dead_letters], topics.stream)
        ),
        sink_dead_letters=spark.createDataFrame([], "detail_partition int, detail_offset bigint"),
        refused_members=spark.createDataFrame([], "member_partition int, member_offset bigint"),
        members=readers.members(frames[topics.table], target.layout),
        table=spark.createDataFrame(
            [],
            "board_id string, detail_partition int, detail_offset bigint, digest bigint, "
            "typed boolean",
        ),
        waiting=spark.createDataFrame(
            [],
            "board_id string, source_partition int, source_offset bigint, "
            f"member_id {_key_type(pipeline)}, arrived_ms bigint",
        ),
        table_read=TableRead(pa.table({}), []),
    )
    snapshot = Snapshot(
        at,
        {topic: {0: 0} for topic in ends},
        ends,
        JobProgress(0, {topics.stream: ends[topics.stream], topics.table: ends[topics.table]}),
        JobProgress(0, {topics.joined: ends[topics.joined]}),
    )
    options = ReconcileOptions(unmatched_timeout_ms=1)
    facts = spark_checks.evaluate(
        inputs, Settings(), topics, snapshot, pipeline.join.mode, 0, options, in_process=True
    )
    _, balance = spark_checks.summarize(
        spark_checks.fact_counts(facts), lambda kind: spark_checks.fact_examples(facts, kind, 5)
    )
    return {kind: count for kind, count in balance.get(0, {}).items() if count}


def _unexpired(frame):
    """Records read from their topic, none of them evidence kept of a deleted one."""
    return frame.withColumn(EXPIRED, F.lit(False))


def _key_type(pipeline: Pipeline) -> str:
    """The Spark type the checks keep the table's key in."""
    return "bigint" if isinstance(pipeline.table.fields[pipeline.table.key], Int64) else "string"


def manifest_balance(found: Outcomes) -> dict[str, int]:
    """The balance the manifest's outcomes give: every stream record read, in one outcome."""
    outcome = {"joined": "joined", "dead_letter": "dead_lettered"}
    counted = Counter(outcome.get(kind, "unmatched") for kind in found.expected.values())
    total = len(found.expected)
    return {"source": total, "read": total, **counted}


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(declarations(), st.integers(0, 2**16))
def test_any_declaration_joins_its_generated_data_as_its_manifest_says(
    spark, pipeline: Pipeline, seed: int
) -> None:
    found = outcomes(spark, pipeline, seed)
    assert found.actual == found.expected, pipeline.model_dump_json(exclude_defaults=True)
    balance = reconciled_balance(spark, pipeline, found)
    assert balance == manifest_balance(found), pipeline.model_dump_json(exclude_defaults=True)


def test_the_comparison_can_fail(spark) -> None:
    """The same comparisons catch a join that lost the deletions and outputs lost on the way:
    orders' tombstones withheld from the join, it fails on exactly the orders of the deleted
    customers (joined, not unmatched as deleted); two joined records left out of the outputs,
    the reconciliation's balance has them missing, not joined."""
    orders = shipped("orders")
    found = outcomes(spark, orders, seed=5)
    assert found.actual == found.expected
    assert reconciled_balance(spark, orders, found) == manifest_balance(found)
    short = reconciled_balance(spark, orders, found, lost=2)
    manifest = manifest_balance(found)
    assert short == {**manifest, "joined": manifest["joined"] - 2, "missing": 2}

    kinds = Plan(GeneratorOptions(**OPTIONS, seed=5, malformed=MALFORMED), orders).kinds
    lost = outcomes(spark, orders, seed=5, withheld={kinds.deletes})
    expected = lost.expected
    assert {key for key in expected if lost.actual[key] != expected[key]} == {
        key for key, outcome in expected.items() if outcome == "member_deleted"
    }
    assert {lost.actual[key] for key, o in expected.items() if o == "member_deleted"} == {"joined"}
