"""The dead-letter size bound holds for the worst record the envelope can be given."""

from __future__ import annotations

import json

from boardstream.dead_letters import (
    ERROR_MAX_CHARS,
    FIELDS,
    RECORD_OVERHEAD_BYTES,
    envelope_json,
    largest_dead_letter,
)

PREFIX = 1_000


def test_the_largest_envelope_stays_within_the_bound() -> None:
    worst_error = "\x01" * (ERROR_MAX_CHARS + 500)  # each escaped to six bytes, then cut
    key = value = b"\xff" * (PREFIX + 1)
    letter = envelope_json(
        worst_error, "t" * 249, 2**31 - 1, -(2**63), -(2**63), key, value, PREFIX
    )
    size = len(letter.encode()) + PREFIX  # the DLQ record's key is the key's prefix
    assert size <= largest_dead_letter(PREFIX) - RECORD_OVERHEAD_BYTES
    parsed = json.loads(letter)
    assert tuple(parsed) == FIELDS
    assert parsed["error"] == "\x01" * ERROR_MAX_CHARS
    assert (parsed["value_bytes"], parsed["truncated"]) == (PREFIX + 1, True)


def test_a_record_within_the_prefix_is_kept_whole() -> None:
    letter = json.loads(envelope_json("e", "board", 0, 1, 2, None, b"abc", PREFIX))
    assert (letter["key_base64"], letter["key_bytes"], letter["key_sha256"]) == (None, None, None)
    assert (letter["value_base64"], letter["truncated"]) == ("YWJj", False)
