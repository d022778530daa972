"""How a bad declaration is said: one line, the file, the path of the key, the problem.

Pydantic reports every error it finds, several lines each; a user fixes one thing at a time, so
the first is said, in the declaration's own words (``stream.fields.id.max_chars``, not pydantic's
location with the union's tag in it).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from boardstream.errors import PipelineDeclarationError


class Problem(ValueError):
    """A validator's finding about the key ``path`` below the model it checks (empty: the
    model itself)."""

    def __init__(self, problem: str, *path: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path = path


def unknown_key(key: object, known: list[str]) -> Problem:
    """A key no model has: a typo names what it was likely meant to be."""
    close = difflib.get_close_matches(str(key), known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else f" (expected one of {', '.join(known)})"
    return Problem(f"unknown key{hint}", str(key))


def refusal(file: Path, path: Iterable[object], problem: str) -> PipelineDeclarationError:
    """``file: path: problem``, or ``file: problem`` of the file as a whole."""
    where = ".".join(str(part) for part in path)
    return PipelineDeclarationError(
        f"{file}: {where}: {problem}" if where else f"{file}: {problem}"
    )


def first_problem(
    file: Path, error: ValidationError, type_tags: tuple[str, ...]
) -> PipelineDeclarationError:
    """The first of pydantic's errors as one refusal. ``type_tags`` are the field types' tags,
    which pydantic puts in a location after the field's name."""
    details = error.errors()[0]
    loc = _declared_path(details["loc"], type_tags)
    cause = details.get("ctx", {}).get("error")
    if isinstance(cause, Problem):
        return refusal(file, [*loc, *cause.path], cause.problem)
    if details["type"] == "union_tag_not_found":
        return refusal(file, [*loc, "type"], f"missing (one of {_tags(type_tags)})")
    if details["type"] == "union_tag_invalid":
        tag = details.get("ctx", {}).get("tag")
        return refusal(file, [*loc, "type"], f"unknown type {tag!r} (one of {_tags(type_tags)})")
    return refusal(file, loc, _said(details))


def _declared_path(loc: tuple[int | str, ...], type_tags: tuple[str, ...]) -> list[int | str]:
    """Pydantic's location less what is not a key of the file: the tag after a field's name
    (``fields``, name, tag) and the ``[key]`` marking a key's own error."""
    path = []
    for index, part in enumerate(loc):
        is_tag = index >= 2 and loc[index - 2] == "fields" and part in type_tags
        if not is_tag and part != "[key]":
            path.append(part)
    return path


def _said(details: ErrorDetails) -> str:
    kind, given = details["type"], details["input"]
    if kind == "value_error":
        return str(details["ctx"]["error"])
    if kind == "missing":
        return "missing (required)"
    if kind == "too_short":
        return "must not be empty"
    if kind in ("model_type", "dict_type"):
        return f"must be a mapping of keys, got {_shown(given)}"
    message = details["msg"].removeprefix("Input should be ")
    return f"must be {message}, got {_shown(given)}"


def _tags(type_tags: tuple[str, ...]) -> str:
    return ", ".join(type_tags)


def _shown(value: Any) -> str:
    if isinstance(value, dict | list):
        return f"a {'mapping' if isinstance(value, dict) else 'list'}"
    return repr(value)
