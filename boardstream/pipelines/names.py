"""The names a declaration gives: SQL identifiers, Kafka topics and durations, each checked
where it is written so a bad one is refused in the declaration, not by the broker or the
database minutes into a run. Each type carries its rule into the JSON Schema too, so an editor
flags it as it is typed."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

from boardstream.durations import PATTERN, parse_ms

# Unquoted in PostgreSQL, SQLite and Spark alike, and at most PostgreSQL's 63 bytes: a name
# that needs no quoting anywhere it goes.
IDENTIFIER = r"^[a-z_][a-z0-9_]{0,62}$"
# A pipeline's name, shorter: its reconciliation's tables and their indexes are named after it
# (:func:`store_table`) and must stay within PostgreSQL's 63 bytes, a staged copy's tag included.
MAX_PIPELINE_CHARS = 24
PIPELINE_NAME = rf"^[a-z_][a-z0-9_]{{0,{MAX_PIPELINE_CHARS - 1}}}$"
# Kafka's own rule (kafka.common.internals.Topic): these characters, at most 249, not . or ..
MAX_TOPIC_CHARS = 249
TOPIC = rf"^(?!\.{{1,2}}$)[a-zA-Z0-9._-]{{1,{MAX_TOPIC_CHARS}}}$"


def _identifier(name: str) -> str:
    if not re.match(IDENTIFIER, name):
        raise ValueError(
            f"{name!r} is not a SQL identifier (lower-case letters, digits and _, not starting "
            "with a digit, at most 63 characters)"
        )
    return name


def _pipeline_name(name: str) -> str:
    _identifier(name)
    if len(name) > MAX_PIPELINE_CHARS:
        raise ValueError(
            f"a pipeline's name is at most {MAX_PIPELINE_CHARS} characters (its reconciliation's "
            f"tables are named after it), this one {len(name)}"
        )
    return name


def _topic(name: str) -> str:
    if len(name) > MAX_TOPIC_CHARS:
        raise ValueError(
            f"a Kafka topic name is at most {MAX_TOPIC_CHARS} characters, this one {len(name)}"
        )
    if not re.match(TOPIC, name):
        raise ValueError(
            f"{name!r} is not a legal Kafka topic name (letters, digits, '.', '_' and '-', at "
            "most 249 characters, not '.' or '..')"
        )
    return name


def _duration(text: str) -> str:
    if parse_ms(text) <= 0:
        raise ValueError(f"must be more than 0, got {text!r}")
    return text


def colliding(topic: str) -> str:
    """The name Kafka compares topics by: it refuses a topic whose name differs from an
    existing one's only in '.' against '_' (their metric names would be the same)."""
    return topic.replace(".", "_")


Identifier = Annotated[
    str, AfterValidator(_identifier), Field(json_schema_extra={"pattern": IDENTIFIER})
]
PipelineName = Annotated[
    str, AfterValidator(_pipeline_name), Field(json_schema_extra={"pattern": PIPELINE_NAME})
]
Topic = Annotated[str, AfterValidator(_topic), Field(json_schema_extra={"pattern": TOPIC})]
# Kept as written (10m, 7d) so a declaration reads back as it was given; ``parse_ms`` reads it.
Duration = Annotated[
    str, AfterValidator(_duration), Field(json_schema_extra={"pattern": PATTERN.pattern})
]


def with_article(label: str) -> str:
    """``a board``, ``an orders``: a name in a message, with its article."""
    return f"{'an' if label[:1].lower() in 'aeiou' else 'a'} {label}"


def query_name(pipeline: str, part: str) -> str:
    """A pipeline's query (``join``, ``sink``) as Spark, its lease and its checkpoint name it:
    ``orders_eu`` ``join`` is ``orders-eu-join``. Names are lowercase identifiers, so no two
    pipelines share one."""
    return f"{pipeline.replace('_', '-')}-{part}"


def store_table(pipeline: str, part: str) -> str:
    """One of a pipeline's reconciliation tables: ``orders`` ``reconcile_source`` is
    ``orders_reconcile_source``. Each pipeline's store is its own, so pipelines share a
    database while no run reads, writes or locks another's; no two pipelines' names meet, as
    every part starts with ``reconcil`` and none is another's ``_``-suffix."""
    return f"{pipeline}_{part}"
