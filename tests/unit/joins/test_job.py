"""The join job's checkpoint identity: which engine's state a checkpoint holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from boardstream.joins.job import ENGINE_ADVICE, JVM, PYTHON, name_legacy_engine
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


def test_a_checkpoint_from_before_the_jvm_engine_is_named_python(tmp_path: Path) -> None:
    checkpoint = legacy_checkpoint(tmp_path / "ckpt")
    name_legacy_engine(checkpoint)
    assert recorded_identity(checkpoint) == {**LEGACY, "engine": PYTHON}
    # Then it resumes under the python engine as before.
    guard_checkpoint(checkpoint, {**LEGACY, "engine": PYTHON}, ENGINE_ADVICE)


def test_the_jvm_engine_refuses_python_state_saying_how_to_rebuild(tmp_path: Path) -> None:
    checkpoint = legacy_checkpoint(tmp_path / "ckpt")
    name_legacy_engine(checkpoint)
    jvm = {key: value for key, value in LEGACY.items() if key != "state_buckets"}
    with pytest.raises(CheckpointMismatchError) as refused:
        guard_checkpoint(checkpoint, {**jvm, "engine": JVM}, ENGINE_ADVICE)
    message = str(refused.value)
    assert "engine: checkpoint has 'python', this run asks for 'jvm'" in message
    assert "neither reads the other's" in message
    assert "running the new engine on a new checkpoint" in message


def test_new_and_named_checkpoints_are_left_alone(tmp_path: Path) -> None:
    name_legacy_engine(tmp_path / "absent")
    assert not (tmp_path / "absent").exists()
    named = tmp_path / "named"
    guard_checkpoint(named, {**LEGACY, "engine": JVM})
    before = (named / IDENTITY_FILE).read_text()
    name_legacy_engine(named)
    assert (named / IDENTITY_FILE).read_text() == before
