"""The field contract (boardstream/joins/schema.py) through the join's real parsing on Spark:
each way a record can break it becomes a dead letter with the exact reason, and the full range
of valid values comes through unchanged."""

from __future__ import annotations

import json

import pytest

from boardstream.joins.parse import parse, routed
from tests.integration.test_hostile_input import BOARD, MEMBER, raw_frame

MAX_BYTES = 4_096
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)


def board(**fields: object) -> bytes:
    record = {"id": "b1", "member_id": 1, "title": "t", "body": "b", "created_ts": 5}
    return json.dumps(record | fields, ensure_ascii=False).encode()


def member(**fields: object) -> bytes:
    record = {"member_id": 42, "nickname": "n", "modified_at": "2025-01-01T00:00:00"}
    return json.dumps(record | fields, ensure_ascii=False).encode()


GOOD_BOARD = board()
B1 = b"b1"
INVALID = [
    (BOARD, B1, GOOD_BOARD + b" xyz", "value has trailing text after the JSON object"),
    (BOARD, B1, GOOD_BOARD + GOOD_BOARD, "value has trailing text after the JSON object"),
    (BOARD, B1, GOOD_BOARD + b"]", "value has trailing text after the JSON object"),
    (BOARD, B1, GOOD_BOARD + b' "x"', "value has trailing text after the JSON object"),
    (BOARD, B1, GOOD_BOARD + b" {", "value has trailing text after the JSON object"),
    # Traps for the one-brace fast path: U+2028 after the object (blank to Java, not to JSON),
    # a string ending in an escaped backslash, and a "}" in a string before the trailing text.
    (BOARD, B1, GOOD_BOARD + "\u2028".encode(), "value has trailing text after the JSON object"),
    (BOARD, B1, board(title="x\\") + b" x", "value has trailing text after the JSON object"),
    (
        BOARD,
        B1,
        GOOD_BOARD[:-1] + b',"z":"a\\" ,"} x"}',
        "value has trailing text after the JSON object",
    ),
    (
        BOARD,
        B1,
        board(member_id="42"),
        "member_id must be a JSON integer in the int64 range, got STRING",
    ),
    (
        BOARD,
        B1,
        board(created_ts=2**63),
        "created_ts must be a JSON integer in the int64 range, got DECIMAL(19,0)",
    ),
    (
        BOARD,
        B1,
        board(created_ts=-(2**63) - 1),
        "created_ts must be a JSON integer in the int64 range, got DECIMAL(19,0)",
    ),
    (
        BOARD,
        B1,
        board(created_ts=1.5),
        "created_ts must be a JSON integer in the int64 range, got DECIMAL(2,1)",
    ),
    (BOARD, B1, board(title=5), "title must be a JSON string, got BIGINT"),
    (BOARD, B1, board(title={"a": 1}), "title must be a JSON string, got OBJECT"),
    (BOARD, B1, board(body=[1]), "body must be a JSON string, got ARRAY"),
    (BOARD, B1, board(body=True), "body must be a JSON string, got BOOLEAN"),
    (BOARD, B1, board(title="a\x00b"), "title contains U+0000, which text columns cannot hold"),
    (BOARD, B1, board(title="x").replace(b'"x"', b'"\xff"'), "value is not valid UTF-8"),
    (BOARD, b"\xfe", board(), "key is not valid UTF-8"),
    (
        BOARD,
        B1,
        board(title="x").replace(b'"x"', b'"\\ud800"'),
        "value has an unpaired surrogate escape (\\ud800-\\udfff)",
    ),
    (
        BOARD,
        B1,
        board(title="x").replace(b'"x"', b'"a\\udc00"'),
        "value has an unpaired surrogate escape (\\ud800-\\udfff)",
    ),
    (
        BOARD,
        B1,
        board(title="x").replace(b'"x"', b'"\\ud800\\\\\\udc00"'),
        "value has an unpaired surrogate escape (\\ud800-\\udfff)",
    ),
    (
        BOARD,
        B1,
        GOOD_BOARD[:-1] + b',"title":"again"}',
        "value has a duplicate key in a JSON object",
    ),
    (
        BOARD,
        B1,
        GOOD_BOARD[:-1] + b',"extra":{"a":1,"a":2}}',
        "value has a duplicate key in a JSON object",
    ),
    (BOARD, B1, b"{'id':'b1'}", "value is not valid JSON"),
    (BOARD, B1, board(title=float("nan")), "value is not valid JSON"),
    (BOARD, B1, b"[1]", "value is not a JSON object, got ARRAY"),
    (BOARD, B1, b" \t[1]\r\n", "value is not a JSON object, got ARRAY"),
    (BOARD, B1, b'"b1"', "value is not a JSON object, got STRING"),
    (BOARD, b"x" * 65, board(id="x" * 65), "id is 65 characters, more than 64"),
    (BOARD, b"", board(id=""), "id is shorter than 1 character(s)"),
    (BOARD, B1, board(id=None), "missing field id (absent or null)"),
    # Field names match exactly: "ID" is not the id.
    (
        BOARD,
        B1,
        json.dumps({"ID": "b1", "member_id": 1, "created_ts": 5}).encode(),
        "missing field id (absent or null)",
    ),
    (BOARD, b"b2", board(), "key does not match id"),
    (
        BOARD,
        B1,
        b'{"id":"b1"' + b" " * MAX_BYTES + b"}",
        f"oversized: {MAX_BYTES + 11} bytes > {MAX_BYTES}",
    ),
    (MEMBER, b"042", member(), "member key is not in canonical form (leading zeros, -0): 042"),
    (
        MEMBER,
        b"-0",
        member(member_id=0),
        "member key is not in canonical form (leading zeros, -0): -0",
    ),
    (MEMBER, b"4x", member(), "member key is not an integer: 4x"),
    (
        MEMBER,
        str(2**63).encode(),
        member(),
        f"member key is outside the int64 range: {2**63}",
    ),
    (
        MEMBER,
        b"42",
        member(member_id="42"),
        "member_id must be a JSON integer in the int64 range, got STRING",
    ),
    (MEMBER, b"42", member(nickname=7), "nickname must be a JSON string, got BIGINT"),
    (MEMBER, b"42", member(member_id=43), "member_id in the value differs from the key"),
    (MEMBER, b"42", member(modified_at="soon"), "modified_at is not a timestamp: soon"),
    (MEMBER, b"42", member() + b"x", "value has trailing text after the JSON object"),
    (MEMBER, b"\xff", member(), "key is not valid UTF-8"),
]

VALID_BOARDS = {
    "top of int64": (board(member_id=INT64_MAX, created_ts=INT64_MAX), INT64_MAX, "t"),
    "bottom of int64": (board(member_id=INT64_MIN, created_ts=INT64_MIN), INT64_MIN, "t"),
    "a surrogate pair": (
        board(title="x").replace(b'"x"', b'"\\ud83d\\ude00"'),
        1,
        "\U0001f600",
    ),
    "an escaped backslash before u": (
        board(title="x").replace(b'"x"', b'"\\\\ud800"'),
        1,
        "\\ud800",
    ),
    "brackets and quotes in strings": (board(title='}{"]['), 1, '}{"]['),
    "an escaped quote before a brace": (board(title='a"} x'), 1, 'a"} x'),
    "whitespace around": (b" \n" + board(title="w") + b"\r\n\t ", 1, "w"),
    "unknown fields": (board(extra={"nested": [1, {"x": None}]}), 1, "t"),
    "a field differing only in case": (board(TITLE=5), 1, "t"),
    "null optional text": (board(title=None), 1, None),
}


@pytest.fixture(scope="module")
def outcome(spark):
    rows = [(key, value, topic) for topic, key, value, _ in INVALID]
    long_id = "é" * 64
    rows += [(B1, value, BOARD) for value, _, _ in VALID_BOARDS.values()]
    rows += [
        (long_id.encode(), board(id=long_id), BOARD),
        (str(INT64_MAX).encode(), member(member_id=INT64_MAX), MEMBER),
        (str(INT64_MIN).encode(), member(member_id=INT64_MIN), MEMBER),
        (b"42", None, MEMBER),
    ]
    out = routed(parse(raw_frame(spark, rows), MEMBER, BOARD, MAX_BYTES)).collect()
    return sorted(out, key=lambda r: r.offset)


def test_each_breach_is_a_dead_letter_naming_the_field_and_problem(outcome) -> None:
    errors = [
        None if row.dead_letter is None else json.loads(row.dead_letter)["error"]
        for row in outcome[: len(INVALID)]
    ]
    assert errors == [expected for *_, expected in INVALID]


def test_the_parse_uses_no_deprecated_two_argument_trim(spark) -> None:
    """Spark warns in every session that calls ``ltrim`` or ``rtrim`` with a trim string."""
    parsed = parse(raw_frame(spark, [(B1, GOOD_BOARD, BOARD)]), MEMBER, BOARD, MAX_BYTES)
    spark.conf.set("spark.sql.debug.maxToStringFields", "100000")  # the whole plan, not 25 fields
    try:
        plan = parsed._jdf.queryExecution().logical().toString()
    finally:
        spark.conf.unset("spark.sql.debug.maxToStringFields")
    assert ("btrim" in plan, "ltrim" in plan, "rtrim" in plan) == (True, False, False)


def test_the_whole_range_of_valid_values_is_accepted_unchanged(outcome) -> None:
    valid = outcome[len(INVALID) :]
    assert [row.dead_letter for row in valid] == [None] * len(valid)
    boards = valid[: len(VALID_BOARDS)]
    assert [(row.member_id, row.created_ts, row.title) for row in boards] == [
        (member_id, member_id if abs(member_id) > 1 else 5, title)
        for _, member_id, title in VALID_BOARDS.values()
    ]
    long_id, top, bottom, tombstone = valid[len(VALID_BOARDS) :]
    assert long_id.board_id == "é" * 64
    assert (top.member_id, bottom.member_id) == (INT64_MAX, INT64_MIN)
    assert (top.kind, tombstone.kind, tombstone.member_id) == ("member", "tombstone", 42)
