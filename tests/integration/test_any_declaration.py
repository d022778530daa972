"""Any declaration the model accepts, drawn: its field names and types from the documented set
(text with bounds, int64, double, decimal, boolean, timestamp in each form, date; required or
not), a text or int64 key, a latest or as-of join, and a small data set of it from the
generator with every join case. Through the join's own parser and its operator's per-key logic
(in batch, as repair joins: no broker, no checkpoint), every record ends where its kind in the
manifest says: joined, unmatched for a row never produced or deleted, or a dead letter. A
field the generator writes that the parser refuses, or an operator that loses or misplaces a
record, fails here with the declaration that shows it."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boardstream.generator.plan import STREAM, GeneratorOptions, Plan
from boardstream.joins import jvm_operator
from boardstream.joins.layout import JoinLayout
from boardstream.joins.member_table import JoinOptions
from boardstream.joins.parse import parse_declared, routed_declared
from boardstream.joins.schema import Contract
from boardstream.joins.topics import JoinTopics
from boardstream.pipelines import Pipeline, shipped
from boardstream.reconcile.reads.readers import KAFKA_COLUMNS

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
    joined = jvm_operator.rejoin(routed, layout, join_options, 2_000_000_000_000).collect()
    actual = {}
    for row in joined:
        if row["outcome"] == "dead_letter":
            actual[base64.b64decode(row["dead_key"]).decode()] = "dead_letter"
        else:
            actual[str(row[layout.id_column])] = row["reason"] or row["outcome"]
    return actual, expected


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(declarations(), st.integers(0, 2**16))
def test_any_declaration_joins_its_generated_data_as_its_manifest_says(
    spark, pipeline: Pipeline, seed: int
) -> None:
    actual, expected = outcomes(spark, pipeline, seed)
    assert actual == expected, pipeline.model_dump_json(exclude_defaults=True)


def test_the_comparison_can_fail(spark) -> None:
    """The same comparison catches a join that lost the deletions: orders' tombstones withheld
    from the join, it fails on exactly the orders of the deleted customers (joined, not
    unmatched as deleted)."""
    orders = shipped("orders")
    actual, expected = outcomes(spark, orders, seed=5)
    assert actual == expected
    kinds = Plan(GeneratorOptions(**OPTIONS, seed=5, malformed=MALFORMED), orders).kinds
    lost, expected = outcomes(spark, orders, seed=5, withheld={kinds.deletes})
    assert {key for key in expected if lost[key] != expected[key]} == {
        key for key, outcome in expected.items() if outcome == "member_deleted"
    }
    assert {lost[key] for key, outcome in expected.items() if outcome == "member_deleted"} == {
        "joined"
    }
