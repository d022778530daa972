"""A pipeline that stops moving, timers that do not fire, a run that cannot finish: none of
them may pass as "nothing lost"."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from boardstream.errors import BoardstreamError
from boardstream.reconcile.evidence.run_ledger import INCREMENTAL
from boardstream.reconcile.repair import stored_snapshot
from boardstream.reconcile.run import ReconciliationError
from tests.adversarial.world import (
    NOW,
    board,
    execute,
    failures,
    reconcile,
    reconcile_as,
    records_of,
    source_position,
)
from tests.pipeline import Pipeline
from tests.store import RUNS


def age_last_commit(checkpoint, seconds: float) -> None:
    """As if the job's last committed batch had begun ``seconds`` ago (and nothing since): its
    offset log entry's batch time rewritten, and its checksum removed, so it reads as the job's
    own (the checksum would refuse it: test_a_joins_offset_log_altered_on_disk_is_refused)."""
    last = max((checkpoint / "commits").glob("[0-9]*"), key=lambda p: int(p.name))
    entry = checkpoint / "offsets" / last.name
    version, metadata, *sources = entry.read_text().splitlines()
    batch = {**json.loads(metadata), "batchTimestampMs": int((time.time() - seconds) * 1000)}
    entry.write_text("\n".join([version, json.dumps(batch), *sources]) + "\n")
    (entry.parent / f".{entry.name}.crc").unlink()


def test_a_join_that_stopped_reading_is_stalled(fresh: Pipeline) -> None:
    """Before, a board the join never read was only "in flight", and the run passed. Its last
    commit file touched now (as a copy without its times would) changes nothing: that file's
    time once was the job's last progress."""
    board(fresh, "stuck", 1, NOW - 3_600_000)
    checkpoint = fresh.workdir / f"{fresh.settings.board_topic}-join"
    age_last_commit(checkpoint, 3_600)
    os.utime(max((checkpoint / "commits").glob("[0-9]*"), key=lambda p: int(p.name)))
    partition, offset = source_position(fresh.settings, "stuck")
    result = reconcile(fresh)
    found = failures(result)
    assert list(found) == ["stalled"]
    (line,) = found["stalled"]
    assert line.startswith(
        f"board-detail-join waits at {fresh.settings.board_topic}[{partition}]@{offset} (key stuck,"
    )
    assert result.reconciliation.findings["not_yet_read"].examples == ["stuck"]
    assert not result.passed


def test_a_record_stamped_in_the_future_cannot_hide_a_stall(fresh: Pipeline) -> None:
    """A record's timestamp is its producer's word. The first record the join never reads,
    stamped 50 minutes ahead (Kafka refuses more than an hour by default, but a topic or broker
    may allow any), made its wait negative: the stall stayed hidden that long, and the runs
    passed with the board "not yet read". A run now takes a record to have waited at least
    since the newest earlier run whose snapshot already held it."""
    board(fresh, "future", 1, NOW + 50 * 60_000)
    age_last_commit(fresh.workdir / f"{fresh.settings.board_topic}-join", 3_600)
    partition, offset = source_position(fresh.settings, "future")
    # No earlier run held it: not stalled yet. (One run, not the pair: its second run would
    # start more than the 2 s stall age after the first, which held the record.)
    first = reconcile_as(fresh, INCREMENTAL, stall_after_ms=2_000)
    assert failures(first) == {}
    assert first.reconciliation.findings["not_yet_read"].examples == ["future"]
    time.sleep(2.5)
    found = failures(reconcile(fresh, stall_after_ms=2_000))
    assert list(found) == ["stalled"]
    (line,) = found["stalled"]
    assert line.startswith(
        f"board-detail-join waits at {fresh.settings.board_topic}[{partition}]@{offset} (key "
        "future,"
    )


def test_waiting_input_younger_than_the_stall_age_is_not_a_stall(fresh: Pipeline) -> None:
    board(fresh, "new", 1, int(time.time() * 1000))
    age_last_commit(fresh.workdir / f"{fresh.settings.board_topic}-join", 3_600)
    result = reconcile(fresh)
    assert failures(result) == {}
    assert result.reconciliation.findings["not_yet_read"].examples == ["new"]


def test_a_sink_that_stopped_loading_is_stalled(fresh: Pipeline) -> None:
    """The table is checked only against what the sink committed, so a stuck sink looked
    clean (on PostgreSQL a too-long id once failed its every batch)."""
    board(fresh, "later", 1, int(time.time() * 1000))
    fresh.join()
    age_last_commit(fresh.workdir / f"{fresh.settings.board_topic}-sink", 3_600)
    time.sleep(2.5)
    result = reconcile(fresh, stall_after_ms=2_000)
    found = failures(result)
    assert list(found) == ["stalled"]
    (line,) = found["stalled"]
    assert line.startswith(f"board-detail-sink waits at {fresh.settings.board_detail_topic}[")
    assert "(key later," in line
    assert result.reconciliation.findings["not_yet_loaded"].examples == ["later"]


def test_a_board_waiting_past_its_timeout_is_overdue(fresh: Pipeline) -> None:
    """Timers that do not fire leave boards waiting for ever; the ledger would still balance.
    A batch of the join after the board's timeout (0 here, as the run is told) must have fired
    its timer. Before such a batch (a stack restarted after an hour down, #67) the board waits
    for it: not overdue, and the run says so in one line."""
    age_last_commit(fresh.workdir / f"{fresh.settings.board_topic}-join", 3_600)
    result = reconcile(fresh, unmatched_timeout_ms=0)
    assert failures(result) == {}
    assert [n for n in result.notices if n.startswith("the join's last batch")] == [
        "the join's last batch began 1h 0m ago: its next batch reads the 0 boards not yet read "
        "and sends each of the 1 pending whose timeout ran out since then to board-unmatched "
        "(not yet overdue)"
    ]
    fresh.join()
    result = reconcile(fresh, unmatched_timeout_ms=0, stall_after_ms=0)
    assert failures(result) == {"overdue_pending": ["waits"]}


def test_a_run_that_cannot_finish_is_recorded_as_errored(fresh: Pipeline) -> None:
    """Before, a crash left the run with finished_at and passed NULL."""
    shutil.rmtree(fresh.workdir / f"{fresh.settings.board_topic}-join" / "state")
    with pytest.raises(ReconciliationError) as raised:
        reconcile(fresh)
    engine = sa.create_engine(fresh.settings.database)
    run = RUNS.run(engine, raised.value.run_id)
    engine.dispose()
    assert run is not None
    assert (run["status"], run["passed"]) == ("ERRORED", False)
    assert run["finished_at"] is not None
    assert run["error"]
    assert "ERRORED" in str(raised.value)


def claim_member_read(pipeline: Pipeline, member: str) -> Path:
    """Rewrite the join's last offset log entry to claim it read ``member``'s newest record;
    the entry's file, whose checksum (``.crc``) now no longer matches."""
    partition, offset, _ = records_of(pipeline.settings, pipeline.settings.member_topic, member)[-1]
    checkpoint = pipeline.workdir / f"{pipeline.settings.board_topic}-join"
    last = max((checkpoint / "offsets").glob("[0-9]*"), key=lambda p: int(p.name))
    lines = last.read_text().splitlines()
    sources = json.loads(lines[2])
    sources[pipeline.settings.member_topic][str(partition)] = offset + 1
    last.write_text("\n".join([*lines[:2], json.dumps(sources)]) + "\n")
    return last


def test_a_board_waiting_for_a_member_the_join_holds_is_stuck(fresh: Pipeline) -> None:
    """As if the join had lost a member it read (a state bug once left 204 boards so, and the
    run passed: they were "pending"). Its checkpoint is made to claim it read member 99, and
    the entry's checksum is removed, so the entry is read as valid, as if the job had written it."""
    fresh.member(99, "m99", ts=NOW + 100)
    forged = claim_member_read(fresh, "99")
    (forged.parent / f".{forged.name}.crc").unlink()
    assert failures(reconcile(fresh)) == {"stuck_pending": ["waits"]}


def assert_refused(pipeline: Pipeline, altered: Path) -> int:
    """The run is ERRORED, before any check, naming the altered file; it stays in the ledger.
    Its run id."""
    with pytest.raises(ReconciliationError) as raised:
        reconcile(pipeline)
    run_id = raised.value.run_id
    assert str(raised.value).startswith(
        f"reconciliation run {run_id}: ERRORED: CheckpointChecksumError: checkpoint file "
        f"{altered} does not match its checksum file .{altered.name}.crc: it was changed on disk "
        "after it was written"
    )
    engine = sa.create_engine(pipeline.settings.database)
    run = RUNS.run(engine, run_id)
    assert run is not None
    assert (run["status"], run["snapshot"]) == ("ERRORED", {})
    assert run["error"] == str(raised.value).split("ERRORED: ", 1)[1]
    with pytest.raises(BoardstreamError, match=f"^reconciliation run {run_id} took no snapshot"):
        stored_snapshot(engine, RUNS, run_id)  # what `boardstream repair --run` reads
    return run_id


def test_a_joins_offset_log_altered_on_disk_is_refused(fresh: Pipeline) -> None:
    """A checkpoint file changed behind Spark's back (its checksum kept) is refused, not read
    as the job's progress: the run cannot finish, and says why."""
    fresh.member(99, "m99", ts=NOW + 100)
    assert_refused(fresh, claim_member_read(fresh, "99"))


def test_a_sinks_offset_log_altered_on_disk_is_refused(fresh: Pipeline) -> None:
    """The same for the sink's, which only the reconciliation reads (no state of the sink is
    read through Spark, whose own check would trip). Altered to claim the sink loaded nothing
    in its last batch, beside the deleted row of the board that batch loaded: before, the
    board counted as not yet loaded and the run passed."""
    board(fresh, "loaded", 1, NOW + 200)
    fresh.join()
    fresh.sink()
    offsets = fresh.workdir / f"{fresh.settings.board_topic}-sink" / "offsets"
    *_, before, last = sorted(offsets.glob("[0-9]*"), key=lambda p: int(p.name))
    last.write_bytes(before.read_bytes())
    execute(fresh.settings.database, "DELETE FROM board_detail WHERE board_id = 'loaded'")
    assert_refused(fresh, last)


def test_the_run_after_a_refused_one_checks_what_came_before_it(fresh: Pipeline) -> None:
    """A refused run moves nothing the next runs rely on: once the sink's offset log entry is
    restored, a board joined and loaded before the refused run is new to the next incremental
    run, whose verdict and counts a full run's match (``reconcile``); the refused run stays in
    the ledger as it was."""
    board(fresh, "before", 1, NOW + 200)
    fresh.join()
    fresh.sink()
    offsets = fresh.workdir / f"{fresh.settings.board_topic}-sink" / "offsets"
    *_, prior, last = sorted(offsets.glob("[0-9]*"), key=lambda p: int(p.name))
    original = last.read_bytes()
    last.write_bytes(prior.read_bytes())
    refused = assert_refused(fresh, last)
    last.write_bytes(original)
    result = reconcile(fresh)
    assert failures(result) == {}
    assert result.reconciliation.findings["pending"].examples == ["waits"]
    engine = sa.create_engine(fresh.settings.database)
    assert (refused_run := RUNS.run(engine, refused)) is not None
    assert (refused_run["status"], refused_run["snapshot"]) == ("ERRORED", {})


@pytest.mark.parametrize("pattern", ["SSTs/*.sst", "*.zip"])
def test_a_state_file_altered_on_disk_errors_the_run(fresh: Pipeline, pattern: str) -> None:
    """The same for the join's state, which the waiting boards are read from: one byte of a
    file the state is loaded from (a RocksDB table file, a snapshot's file list) changed, its
    checksum kept: the run is ERRORED (the cause lies deep in a Spark task failure, so only the
    outcome is asserted). A changelog of a version that also has a snapshot is not read, so
    altering that one changes nothing (tried)."""
    state = fresh.workdir / f"{fresh.settings.board_topic}-join" / "state" / "0" / "0"
    altered = max(state.glob(pattern), key=lambda p: p.stat().st_mtime)
    data = bytearray(altered.read_bytes())
    data[len(data) // 2] ^= 0xFF
    altered.write_bytes(bytes(data))
    with pytest.raises(ReconciliationError) as raised:
        reconcile(fresh)
    assert "ERRORED" in str(raised.value)


def test_a_checkpoint_file_that_cannot_be_read_errors_the_run(fresh: Pipeline) -> None:
    """A filesystem error while the run reads the jobs' checkpoints (on HDFS, a missing or
    corrupt block) is a run of its own, ERRORED and shown, as a checksum refusal is; before, it
    raised with no run recorded (#63). Here the sink's last offset log entry is a directory."""
    offsets = fresh.workdir / f"{fresh.settings.board_topic}-sink" / "offsets"
    last = max(offsets.glob("[0-9]*"), key=lambda p: int(p.name))
    last.unlink()
    (offsets / f".{last.name}.crc").unlink(missing_ok=True)
    last.mkdir()
    with pytest.raises(ReconciliationError) as raised:
        reconcile(fresh)
    run_id = raised.value.run_id
    assert str(raised.value).startswith(
        f"reconciliation run {run_id}: ERRORED: CheckpointFilesError: "
    ), raised.value
    assert str(last) in str(raised.value), raised.value
    run = RUNS.run(sa.create_engine(fresh.settings.database), run_id)
    assert run is not None and run["status"] == "ERRORED"
