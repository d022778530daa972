"""argparse glue for boardstream's commands and jobs: types that name the bad value they refuse,
and options objects built from the parsed flags."""

from __future__ import annotations

import argparse
import re
from dataclasses import fields
from typing import Any, TypeVar

from boardstream.durations import parse_ms
from boardstream.errors import InvalidOptionError


def _whole(text: str) -> int:
    try:
        return int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def count(text: str) -> int:
    """argparse type: a whole number >= 0, with an error that names the bad value."""
    value = _whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def ratio(text: str) -> float:
    value = _number(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be between 0 and 100, got {value:g}")
    return value


def positive(text: str) -> int:
    """A whole number > 0."""
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def config_entry(text: str) -> tuple[str, str]:
    """argparse type: one ``KEY=VALUE`` topic config (the value may be empty, the key not)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def duration_text(text: str) -> str:
    """argparse type: a positive duration (:func:`duration_ms`), kept as written: checked by the
    command that hands it on to a job, so bad input is refused before a JVM starts."""
    duration_ms(text)
    return text


def duration_ms(text: str) -> int:
    """argparse type: a positive duration, in milliseconds."""
    try:
        value = parse_ms(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def fraction(text: str) -> float:
    """argparse type: a number strictly between 0 and 1."""
    value = positive_number(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be below 1, got {value:g}")
    return value


def positive_number(text: str) -> float:
    """argparse type: a number > 0 (fractions allowed)."""
    value = _number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def flag_message(error: InvalidOptionError) -> str:
    """A domain's refusal under the flags' names: "update ratio" is ``--update-ratio`` here."""
    message = str(error)
    for option in sorted(error.options, key=len, reverse=True):
        flag = "--" + option.replace(" ", "-").replace("_", "-")
        message = re.sub(rf"(?<![\w-]){re.escape(option)}(?![\w-])", flag, message)
    return message


Options = TypeVar("Options")


def options_from(cls: type[Options], args: argparse.Namespace, **given: Any) -> Options:
    """An options dataclass from the flags whose dest is one of its fields (the rest keep their
    defaults), with ``given`` taking precedence."""
    parsed = {f.name: getattr(args, f.name) for f in fields(cls) if hasattr(args, f.name)}  # type: ignore[arg-type]
    return cls(**{**parsed, **given})
