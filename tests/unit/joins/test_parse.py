"""The parser's pure parts (boardstream/joins/parse.py): the field table it reads every record
through, and the regular expressions it hands to Spark. Everything else in the module is a Spark
column expression, covered with a session by tests/integration/test_parse_contract.py.

The patterns are checked with Python's ``re``: for these constructs (classes, anchors,
fixed-width lookarounds) Java's regex engine, which ``rlike`` runs, matches the same strings."""

from __future__ import annotations

import re

import pytest

from boardstream.joins import parse, schema
from boardstream.joins.schema import INT64, TEXT, Field


def test_fields_merge_both_contracts_by_name_in_contract_order() -> None:
    fields = parse._fields()
    assert list(fields) == [
        "id",
        "member_id",
        "title",
        "body",
        "created_ts",
        "created_at",
        "modified_at",
        "nickname",
        "city",
        "phone",
    ]
    # A name in both contracts is read once, as the board contract declares it.
    assert fields["member_id"] is schema.BOARD_FIELDS[1]
    assert fields["modified_at"] is schema.BOARD_FIELDS[6]
    assert fields["nickname"] is schema.MEMBER_FIELDS[1]


def test_a_name_shared_with_two_json_types_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each field is read once per record, as one type: a name that is an integer in one topic
    and text in the other cannot be."""
    monkeypatch.setattr(schema, "MEMBER_FIELDS", (Field("created_ts", TEXT, required=False),))
    with pytest.raises(AssertionError, match=r"^created_ts$"):
        parse._fields()


def test_a_shared_name_may_differ_in_everything_but_being_an_integer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        schema, "MEMBER_FIELDS", (Field("created_ts", INT64, required=False), *schema.BOARD_FIELDS)
    )
    assert parse._fields()["created_ts"] is schema.BOARD_FIELDS[4]


@pytest.mark.parametrize(
    ("key", "matches"),
    [
        ("0", True),
        ("42", True),
        ("-42", True),
        ("9223372036854775808", True),  # out of range: the next check names it
        ("007", True),  # not canonical: the next check names it
        ("-0", True),
        ("", False),
        ("-", False),
        ("+1", False),
        ("1.0", False),
        ("1e3", False),
        (" 1", False),
        ("1 2", False),
        ("4x", False),
        ("١٢", False),  # Arabic-Indic digits are not [0-9]
    ],
)
def test_member_keys_must_be_decimal_digits(key: str, matches: bool) -> None:
    assert bool(re.search(parse._MEMBER_KEY, key)) is matches


@pytest.mark.parametrize(
    ("escape", "high", "low"),
    [
        (r"\ud800", True, False),
        (r"\uDBFF", True, False),
        (r"\uDa12", True, False),
        (r"\udc00", False, True),
        (r"\uDFFF", False, True),
        (r"\ud7ff", False, False),  # below the surrogates
        (r"\ue000", False, False),  # above them
        (r"\u0041", False, False),
        ("ud800", False, False),  # no backslash: text, not an escape
        (r"\Ud800", False, False),  # JSON escapes are lower-case u
    ],
)
def test_surrogate_escape_patterns(escape: str, high: bool, low: bool) -> None:
    assert (bool(re.fullmatch(parse._HIGH, escape)), bool(re.fullmatch(parse._LOW, escape))) == (
        high,
        low,
    )


def test_json_whitespace_is_the_four_rfc_8259_characters() -> None:
    assert sorted(parse._JSON_WS) == sorted(" \t\n\r")
    assert len(parse._JSON_WS) == 4
