"""The Python side of the JVM join operator (boardstream/joins/jvm_operator.py) agrees with the
Java side (jvm/src/main/java/io/boardstream/join/MemberJoin.java), read as source text.

The two meet only at run time, through the JVM gateway: the operator's class name, the keys dead
letters and ticks travel under, the layouts passed as DDL (which the Java code checks by name
when a query starts) and ``apply``'s positional arguments, two of which are longs that could be
swapped without any error. All of them are pinned here so a change to one side fails at once,
not in a Spark job."""

from __future__ import annotations

import ast
import inspect
import re

from boardstream.joins import jvm_operator, schema
from boardstream.joins.member_table import JoinOptions
from boardstream.settings import PROJECT_ROOT

JAVA = PROJECT_ROOT / "jvm" / "src" / "main" / "java" / "io" / "boardstream" / "join"
SOURCE = (JAVA / "MemberJoin.java").read_text()


def java_list(name: str) -> list[str]:
    """A ``static final List<String> NAME = List.of(...)`` of MemberJoin.java."""
    match = re.search(rf"List<String> {name} =\s*List\.of\(([^)]*)\);", SOURCE)
    assert match, f"no list {name} in MemberJoin.java"
    return re.findall(r'"([^"]*)"', match.group(1))


def java_long(name: str) -> int:
    match = re.search(rf"public static final long {name} = ([^;]+);", SOURCE)
    assert match, f"no constant {name} in MemberJoin.java"
    values = {"Long.MIN_VALUE": -(2**63), "Long.MIN_VALUE + 1": -(2**63) + 1}
    return values[match.group(1).strip()]


def split_top_level(ddl: str) -> list[str]:
    """``ddl``'s comma-separated parts, ignoring commas inside <...>."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(ddl):
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(ddl[start:i].strip())
            start = i + 1
    return [*parts, ddl[start:].strip()]


def ddl_names(ddl: str) -> list[str]:
    return [part.split()[0].strip("`") for part in split_top_level(ddl)]


def element_names(ddl: str, column: str) -> list[str]:
    """The field names of the struct elements of array column ``column``."""
    (part,) = [p for p in split_top_level(ddl) if p.split()[0] == column]
    inner = re.fullmatch(rf"{column} array<struct<(.*)>>", part)
    assert inner, part
    return [field.split(":")[0].strip("`") for field in split_top_level(inner.group(1))]


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


def test_the_operator_names_the_java_class() -> None:
    package = re.search(r"^package ([\w.]+);", SOURCE, re.MULTILINE)
    assert package and "public final class MemberJoin " in SOURCE
    assert package.group(1) == "io.boardstream.join"
    assert jvm_operator.OPERATOR == "io.boardstream.join.MemberJoin"


def test_dead_letter_and_tick_keys_are_the_java_ones() -> None:
    assert jvm_operator.DEAD_LETTER_KEY == java_long("DEAD_LETTER_KEY") == -(2**63)
    assert jvm_operator.TICK_KEY == java_long("TICK_KEY") == -(2**63) + 1


def test_the_output_ddl_has_the_columns_java_writes() -> None:
    assert ddl_names(jvm_operator.OUTPUT_DDL) == java_list("OUTPUT")
    assert (
        schema.ddl(schema.OUTPUT) + ", `dead_key` string, `dead_letter` string"
    ) == jvm_operator.OUTPUT_DDL


def test_the_state_ddls_have_the_columns_java_reads() -> None:
    assert ddl_names(jvm_operator.MEMBER_STATE_DDL) == java_list("MEMBER_STATE")
    assert ddl_names(jvm_operator.WAITING_STATE_DDL) == java_list("WAITING_STATE")
    assert element_names(jvm_operator.MEMBER_STATE_DDL, "versions") == java_list("VERSION")
    assert element_names(jvm_operator.WAITING_STATE_DDL, "boards") == java_list("WAITING")


def test_the_state_ddls_are_pinned() -> None:
    """The JVM engine's checkpointed layout: per member, its versions in one value and the
    boards waiting for it in another."""
    assert jvm_operator.MEMBER_STATE_DDL == (
        "versions array<struct<`nickname`: string, `city`: string, `phone`: string, "
        "`created_at`: string, `modified_at`: string, `valid_from_ms`: bigint, "
        "`partition`: int, `offset`: bigint, `deleted`: boolean>>, deleted_at_ms bigint"
    )
    assert jvm_operator.WAITING_STATE_DDL == (
        "boards array<struct<`board_id`: string, `title`: string, `body`: string, "
        "`created_ts`: bigint, `created_at`: string, `modified_at`: string, `partition`: int, "
        "`offset`: bigint, `timestamp_ms`: bigint, `arrived_ms`: bigint>>"
    )


def test_the_routed_input_is_what_java_reads() -> None:
    """parse.routed selects schema.INPUT then dead_key and dead_letter; member_join appends
    join_key, which Java groups by."""
    routed = [*schema.names(schema.INPUT), "dead_key", "dead_letter"]
    assert java_list("INPUT") == [*routed, "join_key"]


def test_the_struct_spelling() -> None:
    assert jvm_operator._struct((("a", "string"), ("b", "bigint"))) == (
        "struct<`a`: string, `b`: bigint>"
    )


def apply_call() -> ast.Call:
    tree = ast.parse(inspect.getsource(jvm_operator.member_join))
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "apply"
    ]
    assert len(calls) == 1
    return calls[0]


def java_apply_parameters() -> list[tuple[str, str]]:
    match = re.search(r"public static Dataset<Row> apply\(([^)]*)\)", SOURCE)
    assert match
    return [tuple(p.split()) for p in match.group(1).split(",")]


def test_apply_gets_its_arguments_in_the_java_order() -> None:
    """Python passes positional arguments; each options field must land on the Java parameter
    of the same name (unmatchedTimeoutMs, historyRetentionMs and deletedRetentionMs are all
    longs: a swap would run, with the wrong retention)."""
    passed = [ast.unparse(arg) for arg in apply_call().args]
    parameters = java_apply_parameters()
    assert len(passed) == len(parameters)
    ddls = ["outputDdl", "memberStateDdl", "waitingStateDdl"]
    assert [name for _, name in parameters[:4]] == ["routed", *ddls]
    assert passed[1:4] == ["OUTPUT_DDL", "MEMBER_STATE_DDL", "WAITING_STATE_DDL"]
    assert (passed[4], parameters[4]) == ("options.mode == AS_OF", ("boolean", "asOf"))
    for argument, (_, name) in zip(passed[5:], parameters[5:], strict=True):
        python_name = argument.removeprefix("options.")
        assert camel(python_name) == name, (argument, name)


def test_every_option_is_passed() -> None:
    passed = {ast.unparse(arg) for arg in apply_call().args}
    option_fields = {f"options.{name}" for name in JoinOptions.__dataclass_fields__}
    assert option_fields - passed == {"options.mode"}, "mode is passed as asOf"
    assert "options.mode == AS_OF" in passed
