"""Reading a Structured Streaming checkpoint's committed progress."""

from __future__ import annotations

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
