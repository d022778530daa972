"""What the supervisor remembers: a start after a crash is a restart, one after a requested stop
is not, and the file survives a round trip."""

from __future__ import annotations

from boardstream.supervision import register
from boardstream.supervision.register import RUNNING, STOPPED, Start, StreamRecord
from tests.fixtures import isolated_settings


def test_the_first_start_is_no_restart_and_a_start_after_a_crash_is() -> None:
    record = StreamRecord().started(1_000, 11)
    assert record.starts == (Start(1_000, False, 11),)
    record = record.started(5_000, 12)  # nothing asked it to stop: it died
    assert record.starts[-1] == Start(5_000, True, 12)
    assert record.restarts == 1


def test_a_start_after_a_requested_stop_is_no_restart() -> None:
    record = StreamRecord().started(1_000, 11)
    stopped = StreamRecord(STOPPED, record.starts, stop_requested_ms=3_000)
    again = stopped.started(9_000, 12)
    assert again.desired == RUNNING
    assert again.starts[-1] == Start(9_000, False, 12) and again.restarts == 0
    # A stop requested before the run that then died does not excuse that death.
    assert again.started(12_000, 13).restarts == 1


def test_only_the_newest_starts_are_kept() -> None:
    record = StreamRecord()
    for at in range(register.KEPT_STARTS + 5):
        record = record.started(at, at)
    assert len(record.starts) == register.KEPT_STARTS
    assert record.starts[0].at_ms == 5 and record.restarts == register.KEPT_STARTS


def test_a_record_reads_back_as_written(tmp_path) -> None:
    settings = isolated_settings(tmp_path)
    assert register.read(settings, "board-detail-join") == StreamRecord()
    record = StreamRecord(STOPPED, (Start(1, False, 7), Start(2, True, 8)), 3)
    record = record.failed_start(4, "no cores").failed_start(5, "no cores")
    assert record.failed == register.FailedStarts(2, 5, "no cores")
    with register.locked(settings, "board-detail-join"):
        register.write(settings, "board-detail-join", record)
    assert register.read(settings, "board-detail-join") == record
    assert register.read(settings, "board-detail-sink") == StreamRecord()
    assert register.log_file(settings, "board-detail-join") == (
        tmp_path / "streams" / "board-detail-join.log"
    )
