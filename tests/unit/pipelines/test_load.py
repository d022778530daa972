"""Reading a directory of declarations (boardstream/pipelines/load.py): pipelines on one broker
and one database share no name, no topic they write and no sink table; a file checked for a
directory is checked beside its pipelines, in place of its own copy there."""

from __future__ import annotations

import pytest

from boardstream.errors import PipelineDeclarationError
from boardstream.pipelines import check_file, load_directory
from tests.unit.pipelines.declarations import ORDERS, changed, write


def refusal(directory) -> str:
    with pytest.raises(PipelineDeclarationError) as error:
        load_directory(directory)
    return str(error.value)


def test_a_directory_reads_its_yml_and_yaml_files_in_name_order(tmp_path) -> None:
    write(tmp_path, "b.yaml", changed({"name": "b", "sink.table": "b"}))
    write(tmp_path, "a.yml", changed({"name": "a", "sink.table": "a"}, ORDERS | {"outputs": {}}))
    (tmp_path / "notes.txt").write_text("not a declaration")
    # b's outputs are derived from its name too: no clash with a's.
    assert [one.file.name for one in load_directory(tmp_path).values()] == ["a.yml", "b.yaml"]


def test_two_pipelines_may_not_share_a_name(tmp_path) -> None:
    write(tmp_path, "a.yml", ORDERS)
    second = write(tmp_path, "b.yml", changed({"sink.table": "other"}))
    assert refusal(tmp_path) == f"{second}: name: orders is also declared by {tmp_path / 'a.yml'}"


def test_two_pipelines_may_not_write_one_topic(tmp_path) -> None:
    write(tmp_path, "a.yml", ORDERS)
    shared = {"unmatched": "orders-unmatched"}
    second = write(tmp_path, "b.yml", changed({"name": "b", "sink.table": "b", "outputs": shared}))
    assert refusal(tmp_path) == (
        f"{second}: outputs.unmatched: orders-unmatched is also written by pipeline orders "
        f"({tmp_path / 'a.yml'})"
    )


def test_topics_kafka_takes_for_one_collide(tmp_path) -> None:
    write(tmp_path, "a.yml", changed({"outputs": {"joined": "orders.out"}}))
    second = write(
        tmp_path,
        "b.yml",
        changed({"name": "b", "sink.table": "b", "outputs": {"joined": "orders_out"}}),
    )
    assert refusal(tmp_path).startswith(
        f"{second}: outputs.joined: orders_out is also written by pipeline orders"
    )


def test_two_pipelines_may_not_load_one_table(tmp_path) -> None:
    write(tmp_path, "a.yml", ORDERS)
    second = write(tmp_path, "b.yml", changed({"name": "b"}))
    assert refusal(tmp_path) == (
        f"{second}: sink.table: order_customer is also the sink of pipeline orders "
        f"({tmp_path / 'a.yml'})"
    )


def test_a_missing_or_empty_directory_is_refused(tmp_path) -> None:
    missing = tmp_path / "nowhere"
    assert refusal(missing) == (
        f"{missing}: no such directory of pipeline declarations (BOARDSTREAM_PIPELINES_DIR)"
    )
    assert refusal(tmp_path) == f"{tmp_path}: no pipeline declarations (*.yml, *.yaml)"


def test_a_checked_file_replaces_its_copy_in_the_directory(tmp_path) -> None:
    inside = write(tmp_path, "orders.yml", ORDERS)
    assert check_file(inside, tmp_path).name == "orders"
    outside = write(tmp_path / ".." / tmp_path.name, "orders.yml", changed({"join.grace": "1m"}))
    assert check_file(outside, tmp_path).join.grace == "1m"


def test_a_checked_file_is_checked_beside_the_directory(tmp_path) -> None:
    (tmp_path / "dir").mkdir()
    write(tmp_path / "dir", "orders.yml", ORDERS)
    new = write(tmp_path, "new.yml", changed({"name": "new"}))
    with pytest.raises(PipelineDeclarationError) as error:
        check_file(new, tmp_path / "dir")
    assert str(error.value) == (
        f"{new}: sink.table: order_customer is also the sink of pipeline orders "
        f"({tmp_path / 'dir' / 'orders.yml'})"
    )
