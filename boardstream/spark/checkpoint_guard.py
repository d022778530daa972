"""Refuse to resume a checkpoint under a configuration that would misread its state.

Spark notices some changes on restart (a different stateful operator) but not the ones that
matter here: another bucket count re-keys the join's state, another join mode reads it with the
wrong layout, another source topic resumes from offsets of a different topic, another database
leaves the new one without every row loaded before. Each job names the settings its checkpoint
depends on; the first start records them next to Spark's own files (on whatever filesystem they
are: :mod:`~boardstream.spark.checkpoint_files`), every later start compares and stops with the
difference instead of silently corrupting its output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from boardstream.errors import BoardstreamError
from boardstream.locations import child
from boardstream.spark.checkpoint_files import CheckpointFiles

IDENTITY_FILE = "boardstream-identity.json"


class CheckpointMismatchError(BoardstreamError):
    """A checkpoint was written under settings this run changes."""


def guard_checkpoint(
    files: CheckpointFiles,
    checkpoint: str,
    identity: Mapping[str, object],
    advice: Mapping[str, str] | None = None,
) -> None:
    """Record ``identity`` in a new checkpoint; in an existing one, raise if it differs.

    ``identity`` must hold only JSON values (and no secrets: the file is plain text);
    ``advice`` says, per setting, what to do when that one differs (added to the message)."""
    current = json.loads(json.dumps(dict(identity)))  # tuples → lists, as they will be read
    stored = recorded_identity(files, checkpoint)
    if stored:
        changed = sorted(
            k for k in stored.keys() | current.keys() if stored.get(k) != current.get(k)
        )
        if changed:
            differences = "; ".join(
                f"{key}: checkpoint has {stored.get(key)!r}, this run asks for {current.get(key)!r}"
                for key in changed
            )
            advised = "".join(f" {(advice or {})[key]}" for key in changed if key in (advice or {}))
            raise CheckpointMismatchError(
                f"refusing to resume checkpoint {checkpoint}: it was written with other settings "
                f"({differences}).{advised} Run with the original settings, or start from a new "
                "checkpoint (which reprocesses the sources from the beginning)."
            )
        return
    record_identity(files, checkpoint, current)


def record_identity(
    files: CheckpointFiles, checkpoint: str, identity: Mapping[str, object]
) -> None:
    """Write ``identity`` as the checkpoint's (JSON values only)."""
    text = json.dumps(dict(identity), indent=2, sort_keys=True)
    files.write_text(child(checkpoint, IDENTITY_FILE), text + "\n")


def recorded_identity(files: CheckpointFiles, checkpoint: str) -> dict[str, object]:
    """The identity a checkpoint was written with ({} for none yet)."""
    path = child(checkpoint, IDENTITY_FILE)
    return json.loads(files.read_text(path)) if files.exists(path) else {}
