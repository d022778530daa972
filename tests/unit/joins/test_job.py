"""The join job's checkpoint identity: which engine's state a checkpoint holds, and in which
declaration's layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from boardstream.errors import BoardstreamError
from boardstream.joins.job import (
    BOARD_DETAIL_LAYOUT,
    ENGINE_ADVICE,
    JVM,
    PYTHON,
    name_legacy_engine,
)
from boardstream.joins.layout import JoinLayout
from boardstream.pipelines import Pipeline, shipped
from boardstream.reconcile.layout import ReconcileLayout
from boardstream.reconcile.reads import readers
from boardstream.spark.checkpoint_files import CheckpointFiles
from boardstream.spark.checkpoint_guard import (
    IDENTITY_FILE,
    CheckpointMismatchError,
    guard_checkpoint,
    recorded_identity,
)

LEGACY = {"query": "board-detail-join", "join_mode": "latest", "state_buckets": 128}


def legacy_checkpoint(path: Path) -> Path:
    path.mkdir()
    (path / IDENTITY_FILE).write_text(json.dumps(LEGACY))
    return path


def test_a_checkpoint_from_before_the_jvm_engine_is_named_python(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    checkpoint = legacy_checkpoint(tmp_path / "ckpt").as_uri()
    name_legacy_engine(checkpoint_files, checkpoint)
    assert recorded_identity(checkpoint_files, checkpoint) == {**LEGACY, "engine": PYTHON}
    # Then it resumes under the python engine as before.
    guard_checkpoint(checkpoint_files, checkpoint, {**LEGACY, "engine": PYTHON}, ENGINE_ADVICE)


def test_the_jvm_engine_refuses_python_state_saying_how_to_rebuild(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    checkpoint = legacy_checkpoint(tmp_path / "ckpt").as_uri()
    name_legacy_engine(checkpoint_files, checkpoint)
    jvm = {key: value for key, value in LEGACY.items() if key != "state_buckets"}
    with pytest.raises(CheckpointMismatchError) as refused:
        guard_checkpoint(checkpoint_files, checkpoint, {**jvm, "engine": JVM}, ENGINE_ADVICE)
    message = str(refused.value)
    assert "engine: checkpoint has 'python', this run asks for 'jvm'" in message
    assert "neither reads the other's" in message
    assert "running the new engine on a new checkpoint" in message


def test_new_and_named_checkpoints_are_left_alone(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    name_legacy_engine(checkpoint_files, (tmp_path / "absent").as_uri())
    assert not (tmp_path / "absent").exists()
    for engine, extra in ((PYTHON, {}), (JVM, {"state_layout": {"key": "bigint"}})):
        named = tmp_path / f"named-{engine}"
        guard_checkpoint(checkpoint_files, named.as_uri(), {**LEGACY, "engine": engine, **extra})
        before = (named / IDENTITY_FILE).read_text()
        name_legacy_engine(checkpoint_files, named.as_uri())
        assert (named / IDENTITY_FILE).read_text() == before


def test_a_jvm_checkpoint_from_before_the_waiting_variable_is_refused(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    """The JVM engine's first layout kept a member's waiting boards inside ``member``: its
    identity names no state variables, and resuming it would misread the state."""
    checkpoint = (tmp_path / "ckpt").as_uri()
    first_layout = {"query": "board-detail-join", "join_mode": "latest", "engine": JVM}
    guard_checkpoint(checkpoint_files, checkpoint, first_layout)
    with pytest.raises(CheckpointMismatchError) as refused:
        guard_checkpoint(
            checkpoint_files,
            checkpoint,
            {**first_layout, "state_variables": ["member", "waiting"]},
            ENGINE_ADVICE,
        )
    message = str(refused.value)
    assert (
        "state_variables: checkpoint has None, this run asks for ['member', 'waiting']" in message
    )
    assert "rebuild the state by running the join on a new checkpoint" in message


JVM_IDENTITY = {
    "query": "board-detail-join",
    "join_mode": "latest",
    "engine": JVM,
    "state_variables": ["member", "waiting"],
}


def test_a_jvm_checkpoint_from_before_declarations_holds_board_details_layout(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    """Before the layout was derived, board_detail's was the JVM engine's one layout: such a
    checkpoint is named with it and resumes as before."""
    checkpoint = (tmp_path / "ckpt").as_uri()
    guard_checkpoint(checkpoint_files, checkpoint, JVM_IDENTITY)
    name_legacy_engine(checkpoint_files, checkpoint)
    layout = BOARD_DETAIL_LAYOUT.state_identity
    assert recorded_identity(checkpoint_files, checkpoint) == {
        **JVM_IDENTITY,
        "state_layout": layout,
    }
    assert layout["key"] == "bigint" and layout["version"][:2] == ["nickname string", "city string"]
    guard_checkpoint(checkpoint_files, checkpoint, {**JVM_IDENTITY, "state_layout": layout})


@pytest.mark.parametrize(
    "change",
    [
        {"name": "nick"},  # renamed: the same types at the same places, which Spark lets through
        {"type": "int64"},  # retyped
    ],
)
def test_a_checkpoint_of_other_declared_fields_is_refused_saying_what_changed(
    tmp_path: Path, checkpoint_files: CheckpointFiles, change: dict[str, str]
) -> None:
    declared = shipped("board_detail").model_dump(mode="json", by_alias=True)
    fields = declared["table"]["fields"]
    nickname = fields.pop("nickname")
    if "name" in change:
        fields[change["name"]] = nickname
        declared["sink"]["columns"]["nickname"] = f"table.{change['name']}"
    else:
        fields["nickname"] = {"type": change["type"]}
    edited = JoinLayout.of(Pipeline.model_validate(declared)).state_identity
    assert edited != BOARD_DETAIL_LAYOUT.state_identity
    checkpoint = (tmp_path / "ckpt").as_uri()
    layout = {**JVM_IDENTITY, "state_layout": BOARD_DETAIL_LAYOUT.state_identity}
    guard_checkpoint(checkpoint_files, checkpoint, layout)
    with pytest.raises(CheckpointMismatchError) as refused:
        guard_checkpoint(
            checkpoint_files, checkpoint, {**layout, "state_layout": edited}, ENGINE_ADVICE
        )
    message = str(refused.value)
    assert message.count("state_layout: checkpoint has ") == 1
    assert "would be read as this declaration's" in message


def test_the_reader_of_waiting_boards_refuses_the_first_jvm_layout(
    tmp_path: Path, spark: SparkSession, checkpoint_files: CheckpointFiles
) -> None:
    """Reconciliation cannot read the waiting boards of a checkpoint the join refuses; it says
    so before reading its state."""
    checkpoint = (tmp_path / "ckpt").as_uri()
    guard_checkpoint(checkpoint_files, checkpoint, {"query": "board-detail-join", "engine": JVM})
    with pytest.raises(BoardstreamError, match="written by an older version of its JVM engine"):
        readers.pending(spark, ReconcileLayout.of(shipped("board_detail")), checkpoint, 3)
