"""Hostile input, generated (hypothesis), through the jobs' real parsing on Spark: arbitrary
bytes, deep or huge JSON, wrong types, unicode edge cases, duplicate JSON keys, null keys.
Every record comes out exactly once, either as valid typed input or as a dead letter with a
reason and its original bytes; parsing never raises, so the job never stops on a record."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame

from boardstream.aggregations.source import SourceOptions
from boardstream.aggregations.source import parse as parse_source
from boardstream.dead_letters import DEFAULT_PREFIX_BYTES
from boardstream.joins.parse import parse, routed

MEMBER, BOARD = "member", "board"
MAX_BYTES = 4_096
RAW = "key binary, value binary, topic string, partition int, offset bigint, timestamp timestamp"
EXAMPLES = settings(
    max_examples=15,
    deadline=None,
    derandomize=True,  # the same examples every run: a failure replays
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["12", "-3", "1e3", "0x1F", " 7", "٣", "12345678901234567890", ""]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
FIELDS = ("id", "member_id", "title", "body", "created_ts", "nickname", "modified_at")


@st.composite
def record_like(draw) -> bytes:
    """A dict with the expected field names, each of any type, sometimes missing."""
    fields = {name: draw(json_values) for name in FIELDS if draw(st.booleans())}
    if draw(st.booleans()):
        fields["modified_at"] = draw(st.sampled_from(["2026-01-01T00:00:00", "yesterday"]))
    return json.dumps(fields, allow_nan=True).encode()


def duplicate_keys(board_id: str) -> bytes:
    return f'{{"id":"{board_id}","member_id":1,"member_id":"x","created_ts":1}}'.encode()


values = st.one_of(
    st.none(),
    st.binary(max_size=200),
    st.text(max_size=50).map(lambda t: t.encode("utf-8", "surrogatepass")),
    json_values.map(lambda v: json.dumps(v, allow_nan=True).encode()),
    record_like(),
    st.text(max_size=12).map(duplicate_keys),
    st.integers(1, 3_000).map(lambda n: ("[" * n + "]" * n).encode()),  # deep
    st.integers(MAX_BYTES - 20, MAX_BYTES + 20).map(lambda n: b'{"id":"' + b"x" * n + b'"}'),
)
keys = st.one_of(
    st.none(), st.binary(max_size=20), st.integers(-5, 10**6).map(lambda n: str(n).encode())
)
records = st.lists(
    st.tuples(keys, values, st.sampled_from([MEMBER, BOARD])), min_size=1, max_size=30
)


def raw_frame(spark, rows: list[tuple[bytes | None, bytes | None, str]]) -> DataFrame:
    now = datetime.now(UTC)
    return spark.createDataFrame(
        [(key, value, topic, 0, offset, now) for offset, (key, value, topic) in enumerate(rows)],
        RAW,
    )


def assert_dead_letter(
    letter: str, key: bytes | None, value: bytes | None, topic: str, offset: int, prefix: int
) -> None:
    """The envelope names the record and keeps its bytes: whole within ``prefix``, else a
    prefix with the full size and digest."""
    envelope = json.loads(letter)
    assert envelope["error"], envelope
    assert (envelope["source_topic"], envelope["partition"], envelope["offset"]) == (
        topic,
        0,
        offset,
    )
    for name, data in (("key", key), ("value", value)):
        kept = None if data is None else base64.b64encode(data[:prefix]).decode()
        assert envelope[f"{name}_base64"] == kept
        assert envelope[f"{name}_bytes"] == (None if data is None else len(data))
        digest = None if data is None else hashlib.sha256(data).hexdigest()
        assert envelope[f"{name}_sha256"] == digest
    assert envelope["truncated"] is (max(len(key or b""), len(value or b"")) > prefix)


@EXAMPLES
@given(rows=records)
def test_join_parsing_accounts_for_every_record(spark, rows) -> None:
    out = sorted(
        routed(parse(raw_frame(spark, rows), MEMBER, BOARD, MAX_BYTES)).collect(),
        key=lambda r: r.offset,
    )
    assert [r.offset for r in out] == list(range(len(rows))), "each record exactly once"
    for row, (key, value, topic) in zip(out, rows, strict=True):
        if row.dead_letter is not None:
            assert_dead_letter(row.dead_letter, key, value, topic, row.offset, MAX_BYTES)
            continue
        # Valid: everything the processor relies on is there and typed.
        assert row.member_id is not None
        if topic == BOARD:
            assert row.kind == "board" and row.board_id and row.created_ts is not None
            assert key is None or key.decode() == row.board_id
            assert len(value) <= MAX_BYTES
        else:
            assert row.kind == ("tombstone" if value is None else "member")
            assert int(key) == row.member_id
            assert row.event_ms is not None


@EXAMPLES
@given(
    rows=records,
    value_field=st.sampled_from([None, "city"]),
    time_field=st.sampled_from([None, "created_ts"]),
)
def test_aggregation_parsing_accounts_for_every_record(
    spark, rows, value_field, time_field
) -> None:
    options = SourceOptions(topic=MEMBER, value_field=value_field, time_field=time_field)
    out = sorted(parse_source(raw_frame(spark, rows), options).collect(), key=lambda r: r.offset)
    assert [r.offset for r in out] == list(range(len(rows))), "each record exactly once"
    for row, (key, value, topic) in zip(out, rows, strict=True):
        if row.dead_letter is not None:
            prefix = DEFAULT_PREFIX_BYTES
            assert_dead_letter(row.dead_letter, key, value, topic, row.offset, prefix)
        else:
            assert key is not None and row.entity == key.decode("utf-8", "replace")
            assert value is None or value_field is None or row.attribute is not None
            assert row.event_ms is not None
