from __future__ import annotations

import argparse

import pytest

from boardstream.durations import parse_ms
from boardstream.entrypoints.argtypes import duration_ms


@pytest.mark.parametrize(
    ("text", "ms"),
    [("500ms", 500), ("30s", 30_000), ("10m", 600_000), ("2h", 7_200_000), ("1.5d", 129_600_000)],
)
def test_parse(text: str, ms: int) -> None:
    assert parse_ms(text) == ms


@pytest.mark.parametrize("text", ["10", "ten minutes", "-5s", "5 weeks"])
def test_bad_durations_name_the_forms(text: str) -> None:
    with pytest.raises(ValueError, match="expected a duration like 500ms"):
        parse_ms(text)


def test_zero_is_refused_as_an_argument() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="must be > 0"):
        duration_ms("0s")
