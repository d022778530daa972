"""Reading a Structured Streaming checkpoint's committed progress."""

from __future__ import annotations

import os
from pathlib import Path

from boardstream.reconcile.snapshot import committed_progress


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_last_committed_batch_wins_over_a_planned_one(tmp_path: Path) -> None:
    meta = '{"batchWatermarkMs":0,"batchTimestampMs":1}'
    write(tmp_path / "offsets" / "0", f'v1\n{meta}\n{{"board":{{"0":5,"1":7}}}}')
    write(tmp_path / "offsets" / "1", f'v1\n{meta}\n{{"board":{{"0":9,"1":7}}}}')
    write(tmp_path / "offsets" / "2", f'v1\n{meta}\n{{"board":{{"0":11,"1":8}}}}')  # no commit
    write(tmp_path / "commits" / "0", "v1\n{}")
    write(tmp_path / "commits" / "1", "v1\n{}")
    progress = committed_progress(tmp_path)
    assert progress.batch_id == 1
    assert progress.offsets == {"board": {0: 9, 1: 7}}
    assert progress.of("member") == {}


def test_two_sources_and_a_never_started_query(tmp_path: Path) -> None:
    write(tmp_path / "a" / "offsets" / "0", 'v1\n{}\n{"member":{"0":3}}\n{"board":{"0":4}}')
    write(tmp_path / "a" / "commits" / "0", "v1\n{}")
    assert committed_progress(tmp_path / "a").offsets == {"member": {0: 3}, "board": {0: 4}}
    never = committed_progress(tmp_path / "missing")
    assert (never.batch_id, never.offsets) == (None, {})


def test_a_batch_began_when_its_offset_log_says_whatever_the_files_times(tmp_path: Path) -> None:
    """The job's last progress is the batch metadata's ``batchTimestampMs``: a commit file
    touched (or a checkpoint copied without its times) does not make a stalled job look alive."""
    meta = '{"batchWatermarkMs":0,"batchTimestampMs":1700000000123}'
    write(tmp_path / "offsets" / "3", f'v1\n{meta}\n{{"board":{{"0":9}}}}')
    write(tmp_path / "commits" / "3", "v1\n{}")
    os.utime(tmp_path / "commits" / "3", (2_000_000_000, 2_000_000_000))
    os.utime(tmp_path / "offsets" / "3", (2_000_000_000, 2_000_000_000))
    assert committed_progress(tmp_path).began_at_ms == 1_700_000_000_123
