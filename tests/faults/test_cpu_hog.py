"""Jobs beside a CPU hog (issue #47): each finishes, or restarts itself, with exact outcomes.

Spark gives the Python process it starts for a ``transformWithStateInPandas`` query run (on the
driver, planning the first micro-batch) a fixed 10 s to connect back; on a loaded machine it can
take longer, and the query failed ("Python worker failed to connect back"). The jobs now restart
such a query from its checkpoint (``boardstream.spark.streaming.late_python_worker``).

The short form (CI) runs ``table-count`` beside a small hog with that worker's first start made
12 s late (tests/faults/late_worker/sitecustomize.py), so the failure happens on every run, not
only when the load happens to peak at the wrong moment; the counts must be exact. The long form
runs the join, the sink, ``table-count`` and ``compaction measure`` beside 16 busy processes in
their own session (tests/faults/cpu_hog.py says why there), with nothing lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import TopicSpec, create_topics
from tests.faults.cpu_hog import beside
from tests.faults.harness import JOIN_ARGS, SINK_ARGS, Scenario
from tests.pipeline import consume_all

SEED = 20261128
LATE_WORKER = Path(__file__).parent / "late_worker"
LATE_S = 12.0  # past Spark's fixed 10 s
ENTITIES = 600


def votes(s: Scenario) -> tuple[str, Counter[str]]:
    """A table topic of entities voting for values, with changes and deletions; the counts
    per value it must end with (arrival order: an entity's newest record holds)."""
    topic = f"{s.settings.board_topic}-votes"
    spec = TopicSpec(topic, 3, 1, {"cleanup.policy": "compact"})
    create_topics(admin_client(s.settings), s.settings, [spec])
    held: dict[str, str | None] = {}
    for _ in range(3):
        for i in range(ENTITIES):
            entity = f"e{i}"
            value = None if s.rng.random() < 0.1 else f"v{s.rng.randrange(8)}"
            encoded = None if value is None else value.encode()
            s.pipeline.producer.produce(topic, key=entity.encode(), value=encoded)
            held[entity] = value
            s.records_in += 1
    assert s.pipeline.producer.flush(30) == 0
    return topic, Counter(value for value in held.values() if value is not None)


def counts(s: Scenario, topic: str) -> dict[str, int]:
    """The newest nonzero count per value in the job's compacted output."""
    latest = {
        key.decode(): json.loads(value)["count"] for key, value in consume_all(s.settings, topic)
    }
    return {value: count for value, count in latest.items() if count}


def run_beside_hog(
    s: Scenario, hogs: int, command: list[str], log: str, env: dict[str, str] | None = None
) -> int:
    """``boardstream COMMAND`` beside ``hogs`` busy processes in its session; its exit code."""
    cli = [sys.executable, "-m", "boardstream.entrypoints.cli", *command]
    with s.log(log).open("ab") as out:
        process = subprocess.Popen(
            beside(hogs, 240, cli),
            env={**s.env(), **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return process.wait(timeout=900)


def late_worker_env(tmp_path: Path, starts: int) -> dict[str, str]:
    """The job's environment with the driver's pre-init worker ``starts`` times late."""
    started = tmp_path / "late-starts"
    started.mkdir()
    path = os.pathsep.join(p for p in (str(LATE_WORKER), os.environ.get("PYTHONPATH")) if p)
    return {
        "PYTHONPATH": path,
        "BOARDSTREAM_LATE_WORKER_DIR": str(started),
        "BOARDSTREAM_LATE_WORKER_STARTS": str(starts),
        "BOARDSTREAM_LATE_WORKER_S": str(LATE_S),
    }


def table_count(topic: str, output: str) -> list[str]:
    return ["job", "run", "table-count", "--", "--source-topic", topic, "--output-topic", output]


@pytest.mark.long  # minutes: CI runs the restart's unit tests (tests/unit/spark/test_streaming.py)
def test_table_count_restarts_a_query_whose_python_worker_connected_late(
    services, tmp_path: Path
) -> None:
    s = Scenario(
        "table-count beside a CPU hog", services.settings, services.database_url, tmp_path, SEED
    )
    topic, expected = votes(s)
    output = f"{topic}-counts"
    env = late_worker_env(tmp_path, starts=1)
    code = run_beside_hog(s, 2, table_count(topic, output), "table-count", env)
    log = s.log("table-count").read_text(errors="replace")
    assert code == 0, log[-3000:]
    assert "restarting the query from its checkpoint" in log
    assert counts(s, output) == dict(expected)


@pytest.mark.long
@pytest.mark.timeout(2_400)  # four jobs beside 16 hogs, then a reconciliation: over 15 minutes
def test_every_job_beside_a_cpu_hog_loses_nothing(services, tmp_path: Path) -> None:
    """join, sink, table-count and compaction measure each beside 16 busy processes in its
    session; the reconciliation after them must pass (it runs without the hog)."""
    hogs = 16
    s = Scenario(
        "every job beside a CPU hog", services.settings, services.database_url, tmp_path, SEED + 1
    )
    s.produce()
    topic, expected = votes(s)
    for job, args in (("board-detail-join", JOIN_ARGS), ("board-detail-sink", SINK_ARGS)):
        command = ["job", "run", job, "--", "--trigger", "available-now", *args]
        assert run_beside_hog(s, hogs, command, job) == 0, s.tail(job)
    output = f"{topic}-counts"
    assert run_beside_hog(s, hogs, table_count(topic, output), "table-count") == 0, s.tail(
        "table-count"
    )
    assert counts(s, output) == dict(expected)
    measure = ["compaction", "measure", "--topic", s.settings.member_topic]
    assert run_beside_hog(s, hogs, measure, "compaction") == 0, s.tail("compaction")
    s.assert_nothing_lost(0.0, hogs=hogs)
