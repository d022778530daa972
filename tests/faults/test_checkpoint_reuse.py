"""A checkpoint reused with a changed configuration is refused with a clear message, not
resumed into silent corruption; with the original configuration it still resumes. Marked long:
each refusal's message is held by tests/unit/spark/test_checkpoint_guard.py and
tests/unit/joins/test_job.py, a resume after a stop by test_process_kills.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.faults.harness import JOIN_ARGS, SINK_ARGS, Scenario

SEED = 20261125
pytestmark = pytest.mark.long


def refused(s: Scenario, job: str, args: list[str], **env: str) -> str:
    """Run ``job`` expecting the refusal; its output."""
    process = s.start(job, "--trigger", "available-now", *args, extra_env=env)
    assert process.wait(timeout=600) == 2, s.tail(job)
    return s.tail(job)


def test_changed_configuration_is_refused(services, tmp_path: Path) -> None:
    s = Scenario(
        "checkpoint reused with changed configuration",
        services.settings,
        services.database_url,
        tmp_path,
        SEED,
    )
    s.produce()
    s.run_to_end("board-detail-join", JOIN_ARGS)
    s.run_to_end("board-detail-sink", SINK_ARGS)

    engine = ["--max-offsets-per-trigger", "1500", "--engine", "python"]
    output = refused(s, "board-detail-join", engine)
    assert "refusing to resume checkpoint" in output
    assert "engine: checkpoint has 'jvm', this run asks for 'python'" in output
    assert "neither reads the other's" in output
    output = refused(s, "board-detail-join", JOIN_ARGS, BOARDSTREAM_BOARD_TOPIC="another-board")
    assert (
        f"sources: checkpoint has ['{s.settings.member_topic}', '{s.settings.board_topic}']"
        in output
    )
    other_db = f"sqlite:///{tmp_path / 'other.db'}"
    output = refused(s, "board-detail-sink", SINK_ARGS, BOARDSTREAM_DATABASE_URL=other_db)
    assert f"this run asks for '{other_db}'" in output
    s.faults = 3

    # The original configuration resumes; nothing was lost or loaded twice.
    began = time.monotonic()
    s.run_to_end("board-detail-join", JOIN_ARGS)
    s.run_to_end("board-detail-sink", SINK_ARGS)
    s.assert_nothing_lost(time.monotonic() - began)
