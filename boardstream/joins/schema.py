"""Column layouts shared by the parser, the stateful processor and the outputs.

The processor's state and output are tuples/rows in exactly these orders, so they are written
once here and turned into Spark DDL by :func:`ddl`.
"""

from __future__ import annotations

# One parsed, valid input record of either topic, as the processor receives it.
INPUT = (
    ("kind", "string"),  # "member", "tombstone" or "board"
    ("member_id", "bigint"),
    ("event_ms", "bigint"),  # board created_ts; member modified_at; tombstone Kafka timestamp
    ("timestamp_ms", "bigint"),  # Kafka record timestamp: the order records are applied in
    ("partition", "int"),
    ("offset", "bigint"),
    ("board_id", "string"),
    ("title", "string"),
    ("body", "string"),
    ("created_ts", "bigint"),
    ("nickname", "string"),
    ("city", "string"),
    ("phone", "string"),
    ("created_at", "string"),
    ("modified_at", "string"),
)

# A member version: the profile plus where it came from.
MEMBER = (
    ("nickname", "string"),
    ("city", "string"),
    ("phone", "string"),
    ("created_at", "string"),
    ("modified_at", "string"),
    ("valid_from_ms", "bigint"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("deleted", "boolean"),
)

# A board waiting for its member.
PENDING = (
    ("board_id", "string"),
    ("title", "string"),
    ("body", "string"),
    ("created_ts", "bigint"),
    ("created_at", "string"),
    ("modified_at", "string"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("timestamp_ms", "bigint"),
    ("arrived_ms", "bigint"),
)

# What the processor emits; ``outcome`` routes it to board-detail or board-unmatched.
OUTPUT = (
    ("outcome", "string"),  # "joined" or "unmatched"
    ("reason", "string"),  # for unmatched: member_missing, member_deleted, pending_overflow
    ("board_id", "string"),
    ("member_id", "bigint"),
    ("nickname", "string"),
    ("city", "string"),
    ("phone", "string"),
    ("title", "string"),
    ("body", "string"),
    ("created_ts", "bigint"),
    ("created_at", "string"),
    ("modified_at", "string"),
    ("member_modified_at", "string"),
    ("board_partition", "int"),
    ("board_offset", "bigint"),
    ("board_timestamp_ms", "bigint"),
    ("member_partition", "int"),
    ("member_offset", "bigint"),
)


def ddl(columns: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"`{name}` {kind}" for name, kind in columns)


def names(columns: tuple[tuple[str, str], ...]) -> list[str]:
    return [name for name, _ in columns]
