"""Declarations read from their files: one, or a directory of them, each a :class:`Pipeline`
or one refusal naming the file, the key and the problem.

A directory is checked as a whole too: two pipelines on one broker and one database must not
share a name, a topic they write (Kafka's own comparison: '.' and '_' collide) or a sink table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import yaml
from pydantic import ValidationError

from boardstream.errors import PipelineDeclarationError
from boardstream.pipelines.fields import TYPE_NAMES
from boardstream.pipelines.model import SIDES, Pipeline
from boardstream.pipelines.names import colliding
from boardstream.pipelines.problems import first_problem, refusal

SUFFIXES = (".yml", ".yaml")


class Declared(NamedTuple):
    file: Path
    pipeline: Pipeline


class _UniqueKeys(yaml.SafeLoader):
    """YAML that refuses a key given twice (PyYAML keeps the last: a typo's silent winner)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in keys:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice", key_node.start_mark
                )
            keys.add(key)
        return super().construct_mapping(node, deep=deep)


def read(file: Path) -> Pipeline:
    """The pipeline ``file`` declares."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise refusal(file, [], f"cannot be read: {getattr(error, 'strerror', error)}") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeys)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(the file)"
        raise PipelineDeclarationError(
            f"{file}: {where}: not valid YAML: {error.problem}"
        ) from None
    if not isinstance(data, dict):
        raise refusal(file, [], f"expected a mapping of pipeline keys, got {type(data).__name__}")
    try:
        return Pipeline.model_validate(data)
    except ValidationError as error:
        raise first_problem(file, error, TYPE_NAMES) from None


def declarations(directory: Path) -> list[Path]:
    """The declaration files of ``directory``, in name order."""
    if not directory.is_dir():
        raise PipelineDeclarationError(
            f"{directory}: no such directory of pipeline declarations (BOARDSTREAM_PIPELINES_DIR)"
        )
    return sorted(path for path in directory.iterdir() if path.suffix in SUFFIXES)


def load_directory(directory: Path, also: Path | None = None) -> dict[str, Declared]:
    """Every pipeline of ``directory`` by name, and the one ``also`` declares, in place of its
    copy if it is in the directory: read first, and compared with the others last, so a
    clash is said of it."""
    files = declarations(directory)
    if also is not None:
        checked = Declared(also, read(also))
        files = [file for file in files if file.resolve() != also.resolve()]
        return _apart([*(Declared(file, read(file)) for file in files), checked])
    if not files:
        raise PipelineDeclarationError(
            f"{directory}: no pipeline declarations ({', '.join(f'*{s}' for s in SUFFIXES)})"
        )
    return _apart([Declared(file, read(file)) for file in files])


def _apart(declared: list[Declared]) -> dict[str, Declared]:
    """The pipelines by name, none sharing a name, a topic it writes or a sink table."""
    by_name: dict[str, Declared] = {}
    writers: dict[str, Declared] = {}
    sinks: dict[str, Declared] = {}
    for one in declared:
        pipeline = one.pipeline
        if (other := by_name.setdefault(pipeline.name, one)) is not one:
            raise refusal(one.file, ["name"], f"{pipeline.name} is also declared by {other.file}")
        for part, topic in pipeline.outputs:
            if (other := writers.setdefault(colliding(topic), one)) is not one:
                raise refusal(
                    one.file,
                    ["outputs", part],
                    f"{topic} is also written by pipeline {other.pipeline.name} ({other.file})",
                )
        if (other := sinks.setdefault(pipeline.sink.table, one)) is not one:
            raise refusal(
                one.file,
                ["sink", "table"],
                f"{pipeline.sink.table} is also the sink of pipeline {other.pipeline.name} "
                f"({other.file})",
            )
    return by_name


def to_yaml(pipeline: Pipeline) -> str:
    """The resolved declaration, as a file that reads back to the same pipeline."""
    data = pipeline.model_dump(mode="json", exclude_none=True)
    for side in SIDES:  # each field's type first, on one line
        fields = data[side]["fields"]
        data[side]["fields"] = {
            name: {"type": kind["type"], **kind} for name, kind in fields.items()
        }
    return yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, default_flow_style=None, width=100
    )
