"""A checkpoint resumed under settings that change how its state is read is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from boardstream.spark.checkpoint_files import CheckpointFiles
from boardstream.spark.checkpoint_guard import (
    IDENTITY_FILE,
    CheckpointMismatchError,
    guard_checkpoint,
)

IDENTITY = {"query": "board-detail-join", "sources": ("member", "board"), "state_buckets": 16}


def test_first_start_records_the_identity(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    guard_checkpoint(checkpoint_files, (tmp_path / "ckpt").as_uri(), IDENTITY)
    stored = json.loads((tmp_path / "ckpt" / IDENTITY_FILE).read_text())
    assert stored == {
        "query": "board-detail-join",
        "sources": ["member", "board"],
        "state_buckets": 16,
    }


def test_same_identity_resumes(tmp_path: Path, checkpoint_files: CheckpointFiles) -> None:
    guard_checkpoint(checkpoint_files, tmp_path.as_uri(), IDENTITY)
    recorded = tmp_path / IDENTITY_FILE
    first = (recorded.read_text(), recorded.stat().st_mtime_ns)
    # The sources as the file gives them back (a list): the same identity, so no refusal.
    guard_checkpoint(
        checkpoint_files, tmp_path.as_uri(), {**IDENTITY, "sources": ["member", "board"]}
    )
    assert (recorded.read_text(), recorded.stat().st_mtime_ns) == first, "a resume rewrote it"


def test_changed_identity_is_refused_naming_every_difference(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    guard_checkpoint(checkpoint_files, tmp_path.as_uri(), IDENTITY)
    changed = {**IDENTITY, "state_buckets": 32, "join_mode": "as-of"}
    with pytest.raises(CheckpointMismatchError) as refused:
        guard_checkpoint(checkpoint_files, tmp_path.as_uri(), changed)
    message = str(refused.value)
    assert "join_mode: checkpoint has None, this run asks for 'as-of'" in message
    assert "state_buckets: checkpoint has 16, this run asks for 32" in message
    assert tmp_path.as_uri() in message
    # The refusal leaves the recorded identity as it was.
    assert json.loads((tmp_path / IDENTITY_FILE).read_text())["state_buckets"] == 16


def test_advice_is_given_for_the_settings_that_changed(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    advice = {"state_buckets": "Buckets re-key the state.", "sources": "Never shown."}
    guard_checkpoint(checkpoint_files, tmp_path.as_uri(), IDENTITY, advice)
    with pytest.raises(CheckpointMismatchError) as refused:
        guard_checkpoint(
            checkpoint_files, tmp_path.as_uri(), {**IDENTITY, "state_buckets": 32}, advice
        )
    message = str(refused.value)
    assert "this run asks for 32). Buckets re-key the state. Run with the original" in message
    assert "Never shown." not in message
