"""``boardstream pipelines list | check FILE | show NAME``: every class of bad declaration is
one line naming the file, the key and the problem, and exit 2; the shipped declarations list,
show and check."""

from __future__ import annotations

import pytest
import yaml

from boardstream.entrypoints.cli import main
from boardstream.pipelines import SHIPPED, shipped
from boardstream.pipelines.load import read
from boardstream.settings import PROJECT_ROOT
from tests.unit.pipelines.declarations import DELETE, ORDERS, changed, write

NOT_SQL = (
    "is not a SQL identifier (lower-case letters, digits and _, not starting with a digit, at "
    "most 63 characters)"
)
NOT_TOPIC = (
    "is not a legal Kafka topic name (letters, digits, '.', '_' and '-', at most 249 "
    "characters, not '.' or '..')"
)
TYPES = "(one of text, int64, double, decimal, boolean, timestamp, date)"
# One change to the orders declaration per class of problem, and the line that says it.
BAD = {
    "unknown type": (
        {"stream.fields.amount.type": "money"},
        f"stream.fields.amount.type: unknown type 'money' {TYPES}",
    ),
    "no type": (
        {"stream.fields.gift": {"required": True}},
        f"stream.fields.gift.type: missing {TYPES}",
    ),
    "id not a field": (
        {"stream.id": "number"},
        "stream.id: number is not among the fields "
        "(order_id, customer_id, amount, weight_kg, gift, note, placed_at)",
    ),
    "event time not a field": (
        {"stream.event_time": "placed_on"},
        "stream.event_time: placed_on is not among the fields "
        "(order_id, customer_id, amount, weight_kg, gift, note, placed_at)",
    ),
    "key not a field": (
        {"table.key": "customer_id"},
        "table.key: customer_id is not among the fields "
        "(id, name, email, credit_limit, vip, since, updated_at)",
    ),
    "version time not a timestamp": (
        {"table.version_time": "since"},
        "table.version_time: since is date; it must be timestamp",
    ),
    "key of a type no state is kept by": (
        {"stream.id": "gift"},
        "stream.id: gift is boolean; it must be text or int64",
    ),
    "optional key": (
        {"table.fields.id.required": False},
        "table.key: id must be a required field: every record needs one",
    ),
    "reference of another type than the key": (
        {"stream.fields.customer_id": {"type": "int64", "required": True}},
        "stream.join_on: customer_id is int64 but the table's key id is text",
    ),
    "min_chars over max_chars": (
        {"stream.fields.note.min_chars": 501},
        "stream.fields.note.min_chars: min_chars 501 is more than max_chars 500: no value "
        "could pass",
    ),
    "scale over precision": (
        {"stream.fields.amount.scale": 13},
        "stream.fields.amount.scale: scale 13 is more than the precision 12",
    ),
    "precision past 38": (
        {"table.fields.credit_limit.precision": 39},
        "table.fields.credit_limit.precision: must be less than or equal to 38, got 39",
    ),
    "name not a SQL identifier": ({"name": "Orders"}, f"name: 'Orders' {NOT_SQL}"),
    "field name not a SQL identifier": (
        {"stream.fields.order-id": {"type": "text"}},
        f"stream.fields.order-id: 'order-id' {NOT_SQL}",
    ),
    "column name not a SQL identifier": (
        {"sink.columns.1st": "stream.gift"},
        f"sink.columns.1st: '1st' {NOT_SQL}",
    ),
    "topic name with a character Kafka refuses": (
        {"stream.topic": "orders!"},
        f"stream.topic: 'orders!' {NOT_TOPIC}",
    ),
    "topic named ..": ({"table.topic": ".."}, f"table.topic: '..' {NOT_TOPIC}"),
    "topic name too long": (
        {"outputs": {"joined": "j" * 250}},
        "outputs.joined: a Kafka topic name is at most 249 characters, this one 250",
    ),
    "output onto an input": (
        {"outputs": {"dead_letters": "customers"}},
        "outputs.dead_letters: customers is also table.topic",
    ),
    "two outputs Kafka takes for one": (
        {"outputs": {"joined": "orders.out", "unmatched": "orders_out"}},
        "outputs.unmatched: orders_out is also outputs.joined (orders.out: Kafka takes . for _)",
    ),
    "unknown key": ({"join.grace_ms": 1000}, "join.grace_ms: unknown key (did you mean grace?)"),
    "unknown key, nothing like it": (
        {"colour": "blue"},
        "colour: unknown key (expected one of name, description, stream, table, join, outputs, "
        "sink, reconcile, slo)",
    ),
    "missing part": ({"table": DELETE}, "table: missing (required)"),
    "quoted number": (
        {"join.max_buffered_per_key": "10"},
        "join.max_buffered_per_key: must be a valid integer, got '10'",
    ),
    "unknown join mode": (
        {"join.mode": "asof"},
        "join.mode: must be 'latest' or 'as-of', got 'asof'",
    ),
    "bad duration": (
        {"join.grace": "ten minutes"},
        "join.grace: expected a duration like 500ms, 30s, 10m, 2h or 7d, got 'ten minutes'",
    ),
    "sink column of no field": (
        {"sink.columns.customer_name": "table.nam"},
        "sink.columns.customer_name: table.nam: nam is not among the table's fields",
    ),
    "sink without the stream's id": (
        {"sink.columns.order_id": DELETE},
        "sink.columns: keeps no column for stream.order_id (the table's primary key)",
    ),
    "sink without the join key": (
        {"sink.columns.customer_id": DELETE},
        "sink.columns: keeps no column for stream.customer_id or table.id (reconciliation "
        "proves each joined record used its key's row by it)",
    ),
    "a field both sides name, in two JSON forms": (
        {"table.fields.amount": {"type": "text"}},
        "table.fields.amount: text (a JSON string) here but decimal (a JSON number for "
        "decimal(12,2)) in the stream: a field both name is read once per record, in one JSON "
        "form",
    ),
    "sink column on the joined records' timestamp": (
        {"sink.columns.stream_timestamp_ms": "stream.gift"},
        "sink.columns.stream_timestamp_ms: stream_timestamp_ms is the joined records' column "
        "for stream.ROWTIME",
    ),
    "sink column on the sink's own": (
        {"sink.columns.loaded_at": "stream.gift"},
        "sink.columns.loaded_at: loaded_at is the sink's own column",
    ),
}


@pytest.fixture
def directory(tmp_path, monkeypatch):
    folder = tmp_path / "pipelines"
    folder.mkdir()
    monkeypatch.setenv("BOARDSTREAM_PIPELINES_DIR", str(folder))
    return folder


def refused(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_declaration_is_one_line_and_exit_2(case, directory, capsys) -> None:
    changes, line = BAD[case]
    file = write(directory, "orders.yml", changed(changes))
    assert refused(["pipelines", "check", str(file)], capsys) == (
        f"boardstream: error: {file}: {line}\n"
    )


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "name: [orders\n",
            "line 2, column 1: not valid YAML: expected ',' or ']', but got '<stream end>'",
        ),
        ("name: a\nname: b\n", "line 2, column 1: not valid YAML: key 'name' is given twice"),
        ("- orders\n", "expected a mapping of pipeline keys, got list"),
    ],
    ids=["invalid", "duplicate key", "not a mapping"],
)
def test_a_file_that_is_not_a_declaration_is_one_line_and_exit_2(text, line, directory, capsys):
    file = directory / "orders.yml"
    file.write_text(text)
    assert refused(["pipelines", "check", str(file)], capsys) == (
        f"boardstream: error: {file}: {line}\n"
    )


@pytest.mark.parametrize(
    ("changes", "line"),
    [
        ({"sink.table": "other"}, "name: orders is also declared by {first}"),
        (
            {"name": "copy"},
            "sink.table: order_customer is also the sink of pipeline orders ({first})",
        ),
        (
            {"name": "copy", "sink.table": "other", "outputs": {"tick": "orders-join-tick"}},
            "outputs.tick: orders-join-tick is also written by pipeline orders ({first})",
        ),
    ],
    ids=["name", "sink table", "output topic"],
)
def test_what_two_pipelines_share_is_one_line_and_exit_2(changes, line, directory, capsys):
    first = write(directory, "a.yml", ORDERS)
    second = write(directory, "b.yml", changed(changes))
    expected = f"boardstream: error: {second}: {line.format(first=first)}\n"
    assert refused(["pipelines", "check", str(second)], capsys) == expected
    assert refused(["pipelines", "list"], capsys) == expected  # the directory as a whole


def test_check_prints_ok_for_a_good_declaration(directory, capsys) -> None:
    write(directory, "board_detail.yml", yaml.safe_load((SHIPPED / "board_detail.yml").read_text()))
    file = write(directory, "orders.yml", ORDERS)
    assert main(["pipelines", "check", str(file)]) == 0
    assert capsys.readouterr().out == "ok\n"


def test_check_of_a_missing_file_is_one_line_and_exit_2(directory, capsys) -> None:
    missing = directory / "nope.yml"
    assert refused(["pipelines", "check", str(missing)], capsys) == (
        f"boardstream: error: {missing}: cannot be read: No such file or directory\n"
    )


def test_list_names_the_shipped_pipelines(capsys) -> None:
    assert main(["pipelines", "list"]) == 0
    assert capsys.readouterr().out == (
        f"board_detail: board ⋈ member (latest) -> board_detail  [{SHIPPED / 'board_detail.yml'}]\n"
        f"orders: orders ⋈ customers (as-of) -> order_customer  [{SHIPPED / 'orders.yml'}]\n"
    )


@pytest.mark.parametrize("name", ["board_detail", "orders"])
def test_show_prints_the_resolved_declaration(name, tmp_path, capsys) -> None:
    assert main(["pipelines", "show", name]) == 0
    shown = capsys.readouterr().out
    assert yaml.safe_load(shown)["outputs"] == dict(shipped(name).outputs)
    (tmp_path / f"{name}.yml").write_text(shown)
    assert read(tmp_path / f"{name}.yml") == shipped(name)  # it reads back


def test_show_of_an_unknown_pipeline_names_the_choices(capsys) -> None:
    assert main(["pipelines", "show", "nope"]) == 1
    assert capsys.readouterr().err == (
        "boardstream: error: no pipeline 'nope'; declared: board_detail, orders\n"
    )


def test_check_of_a_shipped_declaration_prints_ok(capsys) -> None:
    """As docs/PIPELINES.md runs it: the file checked beside the directory it is in."""
    file = PROJECT_ROOT / "boardstream" / "pipelines" / "declarations" / "orders.yml"
    assert main(["pipelines", "check", str(file)]) == 0
    assert capsys.readouterr().out == "ok\n"
