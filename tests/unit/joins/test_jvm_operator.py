"""The Python side of the JVM join operator (boardstream/joins/jvm_operator.py) agrees with the
Java side (jvm/src/main/java/io/boardstream/join/), read as source text.

The two meet only at run time, through the JVM gateway: the classes, the layouts passed as DDL
(which the Java code checks by position when a query starts), the plan, and the positional
arguments of ``Layout`` and ``JoinOptions``, three of whose longs could be swapped without any
error. All of them are pinned here so a change to one side fails at once, not in a Spark job.
"""

from __future__ import annotations

import ast
import inspect
import re

import pytest

from boardstream.joins import jvm_operator, layout, schema
from boardstream.joins.layout import JoinLayout
from boardstream.joins.member_table import JoinOptions
from boardstream.pipelines import shipped
from boardstream.settings import PROJECT_ROOT

JAVA = PROJECT_ROOT / "jvm" / "src" / "main" / "java" / "io" / "boardstream" / "join"
JOIN = (JAVA / "StreamTableJoin.java").read_text()
BOARD_DETAIL = JoinLayout.of(shipped("board_detail"))


def java_list(name: str) -> list[str]:
    """A ``static final List<String> NAME = List.of(...)`` of StreamTableJoin.java."""
    match = re.search(rf"List<String> {name} =\s*List\.of\(([^)]*)\);", JOIN)
    assert match, f"no list {name} in StreamTableJoin.java"
    return re.findall(r'"([^"]*)"', match.group(1))


def java_parameters(source: str, signature: str) -> list[str]:
    """The parameter names of the constructor or record ``signature`` opens."""
    match = re.search(rf"{re.escape(signature)}\(([^)]*)\)", source)
    assert match, signature
    return [part.split()[-1] for part in match.group(1).split(",")]


def call_arguments(function) -> list[str]:
    """The arguments of the one constructor call ``function`` makes."""
    (call,) = [
        node
        for node in ast.walk(ast.parse(inspect.getsource(function)))
        if isinstance(node, ast.Call) and ast.unparse(node.func).startswith("jvm.io.boardstream")
    ]
    return [ast.unparse(argument) for argument in call.args]


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


def test_the_classes_the_gateway_calls_are_public() -> None:
    assert "public final class StreamTableJoin " in JOIN
    assert "public final class Layout " in (JAVA / "Layout.java").read_text()
    assert "public record JoinOptions(" in (JAVA / "JoinOptions.java").read_text()
    assert "public final class JoinTables " in (JAVA / "JoinTables.java").read_text()


def test_the_routed_input_is_what_java_reads() -> None:
    assert schema.names(BOARD_DETAIL.routed) == java_list("ROUTED")


def test_the_bookkeeping_is_what_java_reads_by_position() -> None:
    assert schema.names(layout.VERSION_BOOKKEEPING) == java_list("VERSION_BOOKKEEPING")
    assert schema.names(layout.WAITING_BOOKKEEPING) == java_list("WAITING_BOOKKEEPING")
    assert java_list("ROW_STATE") == ["versions", "deleted_at_ms"]


def test_board_details_state_is_the_layout_its_checkpoints_hold() -> None:
    """Per member, its versions in one value and the boards waiting for it in another."""
    assert jvm_operator.row_state_ddl(BOARD_DETAIL) == (
        "versions array<struct<`nickname`: string, `city`: string, `phone`: string, "
        "`created_at`: string, `modified_at`: string, `valid_from_ms`: bigint, "
        "`partition`: int, `offset`: bigint, `deleted`: boolean>>, deleted_at_ms bigint"
    )
    assert jvm_operator.waiting_state_ddl(BOARD_DETAIL, "board") == (
        "`boards` array<struct<`board_id`: string, `title`: string, `body`: string, "
        "`created_ts`: bigint, `created_at`: string, `modified_at`: string, `partition`: int, "
        "`offset`: bigint, `timestamp_ms`: bigint, `arrived_ms`: bigint>>"
    )


@pytest.mark.parametrize(
    ("topic", "field"),
    [("cli-orders", "cli_orders"), ("eu.orders", "eu_orders"), ("2024-x", "_2024_xs")],
)
def test_the_waiting_array_is_named_as_avro_takes_a_field(topic: str, field: str) -> None:
    """The state store encodes the state as Avro: a field named with a topic's ``-`` or ``.``
    failed every batch ("Illegal character in: cli-orders")."""
    assert jvm_operator.waiting_state_ddl(BOARD_DETAIL, topic).startswith(f"`{field}` array<")


def test_board_details_output_is_the_python_engines() -> None:
    assert jvm_operator.output_ddl(BOARD_DETAIL) == (
        schema.ddl(schema.OUTPUT) + ", `dead_key` string, `dead_letter` string"
    )


def test_the_special_keys_are_no_valid_key() -> None:
    dead, tick = jvm_operator.SPECIAL_KEYS["bigint"]
    assert (dead, tick) == (-(2**63), -(2**63) + 1)
    assert all(schema.FORBIDDEN_CHAR in key for key in jvm_operator.SPECIAL_KEYS["string"])


def test_the_layout_is_passed_in_the_java_order() -> None:
    parameters = java_parameters((JAVA / "Layout.java").read_text(), "public Layout")
    assert parameters == [
        "plan", "streamFields", "tableFields", "eventIndex", "missing", "deleted", "overflow",
    ]  # fmt: skip
    assert call_arguments(jvm_operator.java_layout) == [
        "list(layout.plan)",
        "len(layout.stream.columns)",
        "len(layout.table.columns)",
        "layout.event_index",
        "MISSING",
        "DELETED",
        "OVERFLOW",
    ]


def test_each_option_lands_on_the_java_component_of_its_name() -> None:
    """unmatchedTimeoutMs, historyRetentionMs and deletedRetentionMs are all longs: a swap
    would run, with the wrong retention."""
    components = java_parameters((JAVA / "JoinOptions.java").read_text(), "record JoinOptions")
    passed = call_arguments(jvm_operator.java_options)
    assert (passed[0], components[0]) == ("options.mode == AS_OF", "asOf")
    names = {"max_pending_per_member": "maxWaitingPerKey"}
    for argument, component in zip(passed[1:], components[1:], strict=True):
        name = argument.removeprefix("options.")
        assert names.get(name, camel(name)) == component, (argument, component)
    fields = {f"options.{name}" for name in JoinOptions.__dataclass_fields__}
    assert fields - set(passed) == {"options.mode"}, "mode is passed as asOf"


def test_the_struct_spelling() -> None:
    assert layout.struct((("a", "string"), ("b", "bigint"))) == "struct<`a`: string, `b`: bigint>"
