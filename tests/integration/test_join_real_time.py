"""The join under Spark's real-time trigger, as a user runs it: `boardstream job run
board-detail-join -- --trigger real-time` under spark-submit, with a task slot per source and
shuffle partition. Records do not wait for the checkpoint interval (joined, late member, dead
letter); a board whose member never comes is sent on as unmatched when a batch begins after its
timeout (timers fire between batches, so the interval bounds how late); SIGTERM stops the job
cleanly. A stop cancels the batch under way (real-time batches are long), so a restart replays
it from the last checkpoint: what it wrote comes again, as identical copies (the Kafka sink is
at-least-once and board-detail consumers are idempotent)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from boardstream.settings import Settings
from tests.fixtures import cli, cli_command, cli_env
from tests.pipeline import Pipeline

# Long enough that an output seen before it ends came out between checkpoints.
LONG_INTERVAL = "5 minutes"
# member, board and tick topics of one partition each, one shuffle partition.
SLOTS = 4
WAIT_S = 90.0


@pytest.fixture
def pipeline(kafka: Settings, tmp_path) -> Pipeline:
    return Pipeline(kafka, None, tmp_path, partitions=1)


def job_env(pipeline: Pipeline, master: str) -> dict[str, str]:
    names = ("member_topic", "board_topic", "board_detail_topic", "unmatched_topic", "dlq_topic")
    topics = {f"BOARDSTREAM_{n.upper()}": getattr(pipeline.settings, n) for n in names}
    extra = {**topics, "BOARDSTREAM_PARTITIONS": "1", "BOARDSTREAM_SPARK_MASTER": master}
    return cli_env(pipeline.settings, extra)


def join_args(pipeline: Pipeline, *more: str, interval: str = LONG_INTERVAL) -> list[str]:
    return [
        "job", "run", "board-detail-join", "--",
        "--trigger", "real-time", "--interval", interval,
        "--unmatched-timeout", "3s",
        "--checkpoint", str(pipeline.workdir / "join-checkpoint"),
        *more,
    ]  # fmt: skip


@pytest.fixture
def real_time_join(pipeline: Pipeline) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Starts the real-time join in the background; stops whatever is left at the end."""
    started: list[subprocess.Popen[str]] = []

    def start(interval: str = LONG_INTERVAL) -> subprocess.Popen[str]:
        job = subprocess.Popen(
            cli_command(*join_args(pipeline, interval=interval)),
            env=job_env(pipeline, f"local[{SLOTS}]"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started.append(job)
        return job

    yield start
    for job in started:
        if job.poll() is None:
            job.kill()
            job.wait()


def wait_for(condition: Callable[[], bool], job: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert job.poll() is None, f"the join exited ({job.returncode}):\n{job.stdout.read()}"
        assert time.monotonic() < deadline, f"no {what} after {WAIT_S:.0f} s"
        time.sleep(0.5)


def driver_pid(pipeline: Pipeline) -> int:
    """The job's Python driver (spark-submit's child), found by its checkpoint argument."""
    checkpoint = str(pipeline.workdir / "join-checkpoint")
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:  # not a process, or it has ended
            continue
        python = Path(args[0].decode()).name.startswith("python")  # not spark-submit's java
        driver = args[1:2] and args[1].endswith(b"board_detail_join.py")
        if python and driver and checkpoint.encode() in args:
            return int(proc.name)
    raise AssertionError(f"no driver process with {checkpoint}")


def stop(pipeline: Pipeline, job: subprocess.Popen[str]) -> str:
    """SIGTERM to the driver, as a supervisor stops the stream: the query stops, the driver
    exits 0, and so do spark-submit and the command, with nothing logged at ERROR (the stop
    cancels the real-time batch under way, whose write Spark would log as aborted)."""
    os.kill(driver_pid(pipeline), signal.SIGTERM)
    output, _ = job.communicate(timeout=180)
    causes = [line for line in output.splitlines() if "Exception" in line or "rror: " in line]
    assert job.returncode == 0, "\n".join(causes[-20:])
    errors = [line for line in output.splitlines() if " ERROR " in line]
    assert errors == [], "\n".join(errors)
    return output


def test_records_flow_between_checkpoints_and_timers_fire_between_batches(
    pipeline, real_time_join, t0: int
) -> None:
    job = real_time_join()
    pipeline.member(1, "first", t0)
    pipeline.board("a" * 24, 1, t0 + 1)
    wait_for(lambda: "a" * 24 in pipeline.detail(), job, "joined board")

    pipeline.board("late" + "0" * 20, 2, t0 + 2)  # its member comes after it
    pipeline.board("orphan" + "0" * 18, 3, t0 + 3)  # its member never comes
    pipeline.send(pipeline.settings.board_topic, b"bad", b"{not json", t0 + 4)
    pipeline.member(2, "late", t0 + 5)
    wait_for(lambda: len(pipeline.detail()) == 2, job, "board of the late member")
    wait_for(lambda: pipeline.dead_letters() != [], job, "dead letter")
    output = stop(pipeline, job)  # all within the first batch: no checkpoint interval has passed
    assert "Traceback" not in output
    assert {k: v["nickname"] for k, v in pipeline.detail().items()} == {
        "a" * 24: "first",
        "late" + "0" * 20: "late",
    }
    assert pipeline.unmatched() == {}  # its timer waits for a batch to begin
    letters = pipeline.dead_letters()
    assert [(d["source_topic"], d["error"]) for d in letters] == [
        (pipeline.settings.board_topic, "value is not valid JSON")
    ]

    # The restart replays the cancelled batch, then its next batch sends the orphan on.
    job = real_time_join("10 seconds")
    pipeline.board("b" * 24, 1, t0 + 6)
    wait_for(lambda: "b" * 24 in copies(pipeline), job, "board after the restart")
    wait_for(lambda: pipeline.unmatched() != {}, job, "unmatched board")
    stop(pipeline, job)
    assert sorted(copies(pipeline)) == sorted(["a" * 24, "b" * 24, "late" + "0" * 20])
    assert pipeline.unmatched() == {"orphan" + "0" * 18: "member_missing"}
    assert {json.dumps(d, sort_keys=True) for d in pipeline.dead_letters()} == {
        json.dumps(letters[0], sort_keys=True)
    }


def copies(pipeline: Pipeline) -> dict[str, dict]:
    """board-detail by board id, asserting that every copy of a board is the same record."""
    by_id: dict[str, dict] = {}
    for row in pipeline.records(pipeline.settings.board_detail_topic):
        assert by_id.setdefault(row["board_id"], row) == row, f"two versions of {row}"
    return by_id


def test_the_python_engine_is_refused_under_the_real_time_trigger(pipeline) -> None:
    result = cli(
        pipeline.settings,
        *join_args(pipeline, "--engine", "python"),
        extra_env=job_env(pipeline, f"local[{SLOTS}]"),
        timeout=300,
    )
    assert result.returncode == 2
    assert (
        "--trigger real-time runs --engine jvm only: Spark's real-time mode does not run "
        "the Python transformWithState"
    ) in result.stdout + result.stderr  # spark-submit passes its driver's stderr on to stdout
    assert not (pipeline.workdir / "join-checkpoint").exists()


def test_too_few_task_slots_are_refused_before_the_query_starts(pipeline) -> None:
    result = cli(
        pipeline.settings,
        *join_args(pipeline),
        extra_env=job_env(pipeline, "local[3]"),
        timeout=300,
    )
    assert result.returncode == 2
    topics = [pipeline.settings.member_topic, pipeline.settings.board_topic]
    expected = (
        f"--trigger real-time runs a task per source partition (3 in {topics[0]}, {topics[1]}, "
        f"{pipeline.settings.join_tick_topic}) and per shuffle partition (1) at once, 4 task "
        "slots, and Spark has 3 (master local[3]): give it at least 4, e.g. "
        "BOARDSTREAM_SPARK_MASTER=local[4]"
    )
    assert expected in result.stdout + result.stderr
    assert not (pipeline.workdir / "join-checkpoint").exists()


def reconcile(pipeline: Pipeline, *args: str) -> dict[str, int]:
    """`boardstream reconcile` on the real-time join's checkpoint, as a user runs it: the
    counts it prints, after asserting it passed."""
    done = subprocess.run(
        cli_command(
            "reconcile",
            *args,
            "--join-checkpoint", str(pipeline.workdir / "join-checkpoint"),
            "--sink-checkpoint", str(pipeline.workdir / "sink-checkpoint"),
        ),
        env=job_env(pipeline, "local[2]"),
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    (verdict,) = [line for line in done.stdout.splitlines() if line.startswith("reconciliation")]
    assert verdict.endswith("): PASSED"), done.stdout
    counts = [line.split() for line in done.stdout.splitlines() if line.startswith("  ")]
    return {line[0]: int(line[1]) for line in counts if len(line) == 2 and line[1].isdigit()}


def test_a_reconciliation_passes_while_a_batch_runs_and_after_a_stop(
    pipeline, real_time_join, t0: int
) -> None:
    """A real-time batch writes its outputs at once but logs its offsets only when it ends, and
    a stop cancels it, its outputs left behind (replayed at the next start). Before, every
    board it had joined was ``extra`` to a reconciliation, the stream running or stopped."""
    job = real_time_join()
    pipeline.member(1, "first", t0)
    pipeline.board("a" * 24, 1, t0 + 1)
    pipeline.board("o" * 24, 3, t0 + 2)  # its member never comes
    wait_for(lambda: "a" * 24 in pipeline.detail(), job, "joined board")
    running = reconcile(pipeline, "--full")
    stop(pipeline, job)
    stopped = reconcile(pipeline)  # incremental
    for counts in (running, stopped):
        assert (counts["source"], counts["not_yet_read"], counts["extra"]) == (2, 2, 0)
        assert (counts["conflicting"], counts["not_yet_loaded"]) == (0, 1)
