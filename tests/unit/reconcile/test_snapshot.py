"""Reading a Structured Streaming checkpoint's committed progress."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from boardstream.errors import BoardstreamError
from boardstream.reconcile.reads.snapshot import (
    Snapshot,
    as_listed,
    committed_progress,
    under_way_to,
)
from boardstream.spark import checkpoint_lease
from boardstream.spark.checkpoint_files import CheckpointChecksumError, CheckpointFiles
from boardstream.spark.triggers import PROCESSING_TIME, REAL_TIME
from tests.fixtures import isolated_settings


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_last_committed_batch_wins_over_a_planned_one(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    meta = '{"batchWatermarkMs":0,"batchTimestampMs":1}'
    write(tmp_path / "offsets" / "0", f'v1\n{meta}\n{{"board":{{"0":5,"1":7}}}}')
    write(tmp_path / "offsets" / "1", f'v1\n{meta}\n{{"board":{{"0":9,"1":7}}}}')
    write(tmp_path / "offsets" / "2", f'v1\n{meta}\n{{"board":{{"0":11,"1":8}}}}')  # no commit
    write(tmp_path / "commits" / "0", "v1\n{}")
    write(tmp_path / "commits" / "1", "v1\n{}")
    progress = committed_progress(checkpoint_files, tmp_path.as_uri())
    assert progress.batch_id == 1
    assert progress.offsets == {"board": {0: 9, 1: 7}}
    assert progress.of("member") == {}


def test_two_sources_and_a_never_started_query(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    write(tmp_path / "a" / "offsets" / "0", 'v1\n{}\n{"member":{"0":3}}\n{"board":{"0":4}}')
    write(tmp_path / "a" / "commits" / "0", "v1\n{}")
    assert committed_progress(checkpoint_files, (tmp_path / "a").as_uri()).offsets == {
        "member": {0: 3},
        "board": {0: 4},
    }
    never = committed_progress(checkpoint_files, (tmp_path / "missing").as_uri())
    assert (never.batch_id, never.offsets) == (None, {})


def test_a_batch_began_when_its_offset_log_says_whatever_the_files_times(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    """The job's last progress is the batch metadata's ``batchTimestampMs``: a commit file
    touched (or a checkpoint copied without its times) does not make a stalled job look alive."""
    meta = '{"batchWatermarkMs":0,"batchTimestampMs":1700000000123}'
    write(tmp_path / "offsets" / "3", f'v1\n{meta}\n{{"board":{{"0":9}}}}')
    write(tmp_path / "commits" / "3", "v1\n{}")
    os.utime(tmp_path / "commits" / "3", (2_000_000_000, 2_000_000_000))
    os.utime(tmp_path / "offsets" / "3", (2_000_000_000, 2_000_000_000))
    assert committed_progress(checkpoint_files, tmp_path.as_uri()).began_at_ms == 1_700_000_000_123


LATEST = {"board": {0: 20}}


def logged(
    checkpoint_files: CheckpointFiles, checkpoint: Path, batch: int, end: int, *, committed: bool
) -> None:
    """A batch's offset log entry, with its checksum file, written through Hadoop as Spark
    writes it; its commit."""
    meta = '{"batchWatermarkMs":0,"batchTimestampMs":1}'
    entry = (checkpoint / "offsets" / str(batch)).as_uri()
    checkpoint_files.write_text(entry, f'v1\n{meta}\n{{"board":{{"0":{end}}}}}')
    if committed:
        write(checkpoint / "commits" / str(batch), "v1\n{}")


def test_nothing_is_under_way_without_a_later_batch(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    logged(checkpoint_files, tmp_path, 0, 5, committed=True)
    assert (
        under_way_to(
            checkpoint_files,
            tmp_path.as_uri(),
            committed_progress(checkpoint_files, tmp_path.as_uri()),
            LATEST,
        )
        is None
    )


def test_the_next_batch_reads_to_its_logged_end(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    logged(checkpoint_files, tmp_path, 0, 5, committed=True)
    logged(checkpoint_files, tmp_path, 1, 9, committed=False)
    assert under_way_to(
        checkpoint_files,
        tmp_path.as_uri(),
        committed_progress(checkpoint_files, tmp_path.as_uri()),
        LATEST,
    ) == {"board": {0: 9}}
    never = tmp_path / "never"  # a first batch logged, none committed
    logged(checkpoint_files, never, 0, 4, committed=False)
    assert under_way_to(
        checkpoint_files,
        never.as_uri(),
        committed_progress(checkpoint_files, never.as_uri()),
        LATEST,
    ) == {"board": {0: 4}}


def test_a_batch_past_the_next_is_refused(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    """Spark logs a batch only after committing the one before: a copy of an entry (checksum
    and all) put further on is no batch of the query's, and must not widen what is in flight."""
    logged(checkpoint_files, tmp_path, 0, 5, committed=True)
    logged(checkpoint_files, tmp_path, 3, 5, committed=False)
    with pytest.raises(BoardstreamError) as raised:
        under_way_to(
            checkpoint_files,
            tmp_path.as_uri(),
            committed_progress(checkpoint_files, tmp_path.as_uri()),
            LATEST,
        )
    assert str(raised.value).startswith(
        f"the offset log of {tmp_path} holds batch(es) 3 after its last committed batch 0: "
        "Spark logs a batch only after committing the one before"
    )


def test_batches_committed_since_the_progress_was_read_widen_what_is_under_way(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    """A fast job commits batch 1 and logs batch 2 between the reading of its progress and the
    look at its offset log (a sink did, in a time-compressed life): batch 2 reads to its end.
    Without batch 1's commit, batch 2 is no batch of the query's."""
    logged(checkpoint_files, tmp_path, 0, 5, committed=True)
    progress = committed_progress(checkpoint_files, tmp_path.as_uri())
    logged(checkpoint_files, tmp_path, 1, 9, committed=False)
    logged(checkpoint_files, tmp_path, 2, 12, committed=False)
    with pytest.raises(BoardstreamError, match=r"holds batch\(es\) 1, 2 after its last committed"):
        under_way_to(checkpoint_files, tmp_path.as_uri(), progress, LATEST)
    write(tmp_path / "commits" / "1", "v1\n{}")
    assert under_way_to(checkpoint_files, tmp_path.as_uri(), progress, LATEST) == {"board": {0: 12}}


def test_the_next_batchs_entry_is_checked_against_its_checksum(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    logged(checkpoint_files, tmp_path, 0, 5, committed=True)
    logged(checkpoint_files, tmp_path, 1, 9, committed=False)
    entry = tmp_path / "offsets" / "1"
    entry.write_bytes(entry.read_bytes().replace(b'"0":9', b'"0":7'))
    with pytest.raises(
        CheckpointChecksumError, match=r"offsets/1 does not match its checksum file \.1\.crc"
    ):
        under_way_to(
            checkpoint_files,
            tmp_path.as_uri(),
            committed_progress(checkpoint_files, tmp_path.as_uri()),
            LATEST,
        )


def test_a_real_time_batch_may_have_read_whatever_was_listed(
    tmp_path: Path, checkpoint_files: CheckpointFiles
) -> None:
    """A real-time batch logs its offsets only when it ends: while it runs (and after a stop
    cancelled it) its outputs may name any position listed, whoever holds the lease now; and
    the job commits once per interval."""
    settings = isolated_settings(tmp_path)
    checkpoint = tmp_path / "join"
    logged(checkpoint_files, checkpoint, 0, 5, committed=True)
    logged(
        checkpoint_files, checkpoint, 1, 9, committed=False
    )  # the batch under way ends: it is logged first
    committed = committed_progress(checkpoint_files, checkpoint.as_uri())
    no_lease = as_listed(checkpoint_files, settings, checkpoint.as_uri(), committed, LATEST)
    assert no_lease == replace(committed, under_way_to={"board": {0: 9}})
    details = {"trigger": REAL_TIME, "interval": "5 minutes"}
    with checkpoint_lease.hold(settings, checkpoint, "join", details):
        running = as_listed(checkpoint_files, settings, checkpoint.as_uri(), committed, LATEST)
    assert (running.under_way_to, running.real_time_interval_ms) == (LATEST, 300_000)
    assert (
        as_listed(checkpoint_files, settings, checkpoint.as_uri(), committed, LATEST) == running
    )  # the lease released
    with checkpoint_lease.hold(settings, checkpoint, "join", {**details, "interval": "5m"}):
        assert (
            as_listed(
                checkpoint_files, settings, checkpoint.as_uri(), committed, LATEST
            ).real_time_interval_ms
            == 0
        )
    with checkpoint_lease.hold(settings, checkpoint, "join", {"trigger": PROCESSING_TIME}):
        after = as_listed(checkpoint_files, settings, checkpoint.as_uri(), committed, LATEST)
    assert (after.under_way_to, after.real_time_interval_ms) == ({"board": {0: 9}}, None)
    snapshot = Snapshot(datetime(2026, 11, 27, 10, tzinfo=UTC), {}, LATEST, running, after)
    assert Snapshot.from_json(snapshot.to_json()) == snapshot


def test_a_stored_snapshot_of_a_later_batch_reads_to_what_it_listed() -> None:
    """Snapshots stored before the bound was kept said only that a later batch had begun."""
    progress = {"batch_id": 4, "offsets": {"board": {"0": 5}}, "began_at_ms": 1}
    raw = {
        "taken_at": "2026-11-27T10:00:00+00:00",
        "earliest": {"board": {"0": 0}},
        "latest": {"board": {"0": 20}},
        "join": {**progress, "later_batch_started": True},
        "sink": {**progress, "later_batch_started": False},
    }
    snapshot = Snapshot.from_json(raw)
    assert (snapshot.join.under_way_to, snapshot.sink.under_way_to) == (LATEST, None)
    assert Snapshot.from_json(snapshot.to_json()) == snapshot
