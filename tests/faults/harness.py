"""The fault-injection suite's harness: the real jobs as the real commands, on a dedicated broker
and PostgreSQL (so a scenario can stop them), a seeded backlog, faults, and the verdict of the
same reconciliation production runs.

Each scenario records its figures (records in, faults injected, restarts, lost and duplicated
rows, time to recover) in ``test-artifacts/reliability.jsonl``; ``python -m tests.faults.report``
turns the last run of each into the table of docs/RELIABILITY.md.

``BOARDSTREAM_FAULTS=full`` runs the long form (a bigger backlog, more kills); CI runs the short.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from boardstream import failpoints, supervision
from boardstream.generator.plan import STREAM, TABLE, GeneratorOptions, Plan
from boardstream.joins.topics import SHIPPED_PIPELINE
from boardstream.locations import shown
from boardstream.pipelines import query_name
from boardstream.settings import PROJECT_ROOT, Settings
from boardstream.stream_progress import ProgressStore
from tests.pipeline import Pipeline, consume_all, query

FULL = os.environ.get("BOARDSTREAM_FAULTS") == "full"
FIGURES = PROJECT_ROOT / "test-artifacts" / "reliability.jsonl"
# A job killed here is started again at once, and waits for its dead driver's lease: a TTL of
# 10 s (not 30) keeps the suite short and still leaves its renewals room on a loaded machine.
LEASE_TTL_S = 10.0
JOB_SETTINGS = (
    "var_dir",
    "lease_ttl_s",
    "jar_cache",
    "bootstrap_servers",
    "database_url",
    "member_topic",
    "board_topic",
    "board_detail_topic",
    "unmatched_topic",
    "dlq_topic",
    "checkpoint_root",
    "hdfs_replication",
)
JOIN_ARGS = ["--max-offsets-per-trigger", "1500"]  # the default engine (jvm)
SINK_ARGS = ["--max-offsets-per-trigger", "1000"]


def backlog_options(seed: int) -> GeneratorOptions:
    scale = 4 if FULL else 1
    return GeneratorOptions(
        members=1_500 * scale,
        boards=3_000 * scale,
        seed=seed,
        update_ratio=0.2,
        late_members=15 * scale,
    )


@dataclass
class Scenario:
    """One scenario's pipeline: its own topics, checkpoints and job logs under ``workdir``."""

    name: str
    kafka: Settings
    database_url: str
    workdir: Path
    seed: int
    overrides: dict[str, object] = field(default_factory=dict)  # of the pipeline's settings
    declared: str = SHIPPED_PIPELINE  # the shipped declaration the scenario runs
    boards: set[str] = field(default_factory=set)
    records_in: int = 0
    faults: int = 0
    restarts: int = 0

    def __post_init__(self) -> None:
        self.pipeline = Pipeline(
            self.kafka,
            None,
            self.workdir,
            var_dir=self.workdir,
            database_url=self.database_url,
            lease_ttl_s=LEASE_TTL_S,
            declared=self.declared,
            **self.overrides,
        )
        self.settings = self.pipeline.settings
        self.rng = random.Random(self.seed)
        # Another pipeline than the jobs' default is declared where they look for one.
        self.pipeline_args = [] if self.pipeline.shipped else ["--pipeline", self.pipeline.name]
        if not self.pipeline.shipped:
            self.pipeline.declare_in(self.workdir / "pipelines")

    # -- input -------------------------------------------------------------------------------

    def produce(self, options: GeneratorOptions | None = None, part: slice = slice(None)) -> None:
        """The seeded backlog (or the ``part`` of it), with increasing timestamps."""
        plan = Plan(options or backlog_options(self.seed), self.pipeline.deployed.pipeline)
        records = list(plan)[part]
        start = int(time.time() * 1000)
        topics = self.pipeline.topics
        for ts, record in enumerate(records, start=start):
            topic = topics.table if record.topic == TABLE else topics.stream
            self.pipeline.producer.produce(topic, value=record.value, key=record.key, timestamp=ts)
            if record.topic == STREAM:
                self.boards.add(record.key.decode())
        assert self.pipeline.producer.flush(30) == 0
        self.records_in += len(records)

    # -- jobs --------------------------------------------------------------------------------

    def env(self, **extra: str) -> dict[str, str]:
        values = {
            f"BOARDSTREAM_{n.upper()}": str(getattr(self.settings, n))
            for n in JOB_SETTINGS
            if getattr(self.settings, n) is not None
        }
        if not self.pipeline.shipped:
            values["BOARDSTREAM_PIPELINES_DIR"] = str(self.workdir / "pipelines")
        return {**os.environ, **values, "BOARDSTREAM_SPARK_MASTER": "local[2]", **extra}

    def query(self, job: str) -> str:
        """The query (its progress lines' and checkpoint's name) ``job`` runs for this
        scenario's pipeline: ``board-detail-join`` for board_detail, ``orders-join``..."""
        return query_name(self.pipeline.name, job.rsplit("-", 1)[-1])

    def log(self, job: str) -> Path:
        return self.workdir / f"{job}.log"

    def start(
        self, job: str, *args: str, extra_env: dict[str, str] | None = None
    ) -> subprocess.Popen:
        """``boardstream job run JOB -- ARGS`` in its own process group (spark-submit, the JVM
        and the Python workers die together)."""
        return subprocess.Popen(
            [
                *(sys.executable, "-m", "boardstream.entrypoints.cli", "job", "run", job, "--"),
                *self.pipeline_args,
                *args,
            ],
            env=self.env(**(extra_env or {})),
            stdout=self.log(job).open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def continuous(
        self, job: str, args: list[str], extra_env: dict[str, str] | None = None
    ) -> subprocess.Popen:
        return self.start(
            job,
            "--trigger",
            "processing-time",
            "--interval",
            "0 seconds",
            *args,
            extra_env=extra_env,
        )

    def batches(self, job: str) -> int:
        return len(ProgressStore(self.settings.database).read(self.query(job)))

    def await_batch(self, job: str, process: subprocess.Popen, before: int) -> None:
        deadline = time.monotonic() + 300
        while self.batches(job) <= before:
            assert process.poll() is None, self.tail(job)
            assert time.monotonic() < deadline, f"{job} made no progress"
            time.sleep(0.2)

    def kill_mid_run(self, job: str, args: list[str]) -> None:
        """Start ``job`` continuous, let a batch complete, SIGKILL it a seeded moment later."""
        before = self.batches(job)
        process = self.continuous(job, args)
        self.await_batch(job, process, before)
        time.sleep(self.rng.uniform(0.0, 2.0))
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        self.faults += 1

    def kill_at(self, job: str, args: list[str], point: str) -> None:
        """Run ``job`` continuous until the failpoint ``point`` (``name@n``) kills it, then
        check that it died holding a batch it had not committed: its restart must replay it."""
        process = self.continuous(job, args, extra_env={failpoints.ENV: point})
        assert process.wait(timeout=300) == -signal.SIGKILL, self.tail(job)
        self.faults += 1
        checkpoint = Path(shown(self.settings.checkpoint(self.query(job))))  # local: read directly
        planned = max(int(f.name) for f in (checkpoint / "offsets").iterdir() if f.name.isdigit())
        assert not (checkpoint / "commits" / str(planned)).exists(), "no batch left to replay"

    def run_to_end(self, job: str, args: list[str]) -> None:
        process = self.start(job, "--trigger", "available-now", *args)
        assert process.wait(timeout=600) == 0, self.tail(job)

    def tail(self, job: str) -> str:
        return self.log(job).read_text(errors="replace")[-3000:]

    # -- verdict -----------------------------------------------------------------------------

    def reconcile(self, *options: str, **extra_env: str) -> subprocess.CompletedProcess:
        """`boardstream reconcile` against this scenario's checkpoints, as the DAG runs it."""
        return self.cli(*self.reconcile_command(*options), **extra_env)

    def reconcile_command(self, *options: str) -> list[str]:
        return [
            "reconcile",
            f"--join-checkpoint={self.settings.checkpoint(self.query('join'))}",
            f"--sink-checkpoint={self.settings.checkpoint(self.query('sink'))}",
            *self.pipeline_args,
            *options,
        ]

    def cli(self, *command: str, **extra_env: str) -> subprocess.CompletedProcess:
        """`boardstream COMMAND` on this scenario's settings (and ``extra_env``), to its end."""
        return subprocess.run(
            [sys.executable, "-m", "boardstream.entrypoints.cli", *command],
            env=self.env(**extra_env),
            capture_output=True,
            text=True,
            timeout=600,
        )

    def table_counts(self) -> dict[str, int]:
        table = self.pipeline.table
        rows = query(
            self.database_url,
            f"select {table.key}, count(*) from {table.table.name} group by 1",
        )
        return {record_id: count for record_id, count in rows if record_id in self.boards}

    def assert_nothing_lost(self, recover_s: float, **extra: object) -> None:
        """Every board exactly once in board_detail and in board-detail, reconciliation passes;
        then the figures are recorded."""
        loaded = self.table_counts()
        lost = len(self.boards - set(loaded))
        duplicated = sum(count - 1 for count in loaded.values())
        detail = [
            key.decode() for key, _ in consume_all(self.settings, self.pipeline.topics.joined)
        ]
        verdict = self.reconcile()
        record(
            scenario=self.name,
            seed=self.seed,
            records_in=self.records_in,
            boards=len(self.boards),
            faults=self.faults,
            restarts=self.restarts,
            lost=lost,
            duplicated_rows=duplicated,
            topic_replays=len(detail) - len(set(detail)),
            recover_s=round(recover_s, 1),
            reconciliation="PASSED" if verdict.returncode == 0 else "FAILED",
            **extra,
        )
        assert lost == 0, f"{lost} boards missing from board_detail"
        assert duplicated == 0, f"{duplicated} duplicate rows in board_detail"
        assert set(detail) == self.boards, "every board reaches board-detail"
        assert verdict.returncode == 0, verdict.stdout[-3000:] + verdict.stderr[-3000:]
        assert "PASSED" in verdict.stdout


def record(**figures: object) -> None:
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    figures["at"] = time.strftime("%Y-%m-%d %H:%M:%S")
    figures["form"] = "full" if FULL else "short"
    with FIGURES.open("a") as out:
        out.write(json.dumps(figures) + "\n")


class Supervisor:
    """Keeps continuous jobs running as a scheduler with retries would: a job that exits (say,
    its query failed while the broker was away) is started again, and counted."""

    def __init__(self, scenario: Scenario, jobs: dict[str, list[str]]) -> None:
        self.scenario, self.jobs = scenario, jobs
        self.before = {job: scenario.batches(job) for job in jobs}
        self.processes = {job: scenario.continuous(job, args) for job, args in jobs.items()}
        self.exits: list[tuple[str, int]] = []

    def await_batches(self) -> None:
        """Until every job has completed a micro-batch."""
        for job, process in self.processes.items():
            self.scenario.await_batch(job, process, self.before[job])

    def run_until(self, done: Callable[[], bool], timeout_s: float = 600) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            assert time.monotonic() < deadline, (
                f"not done after {timeout_s:g} s; exits {self.exits}"
            )
            for job, process in self.processes.items():
                if process.poll() is not None:
                    self.exits.append((job, process.returncode))
                    self.processes[job] = self.scenario.continuous(job, self.jobs[job])
                    self.scenario.restarts += 1
            time.sleep(1)

    def stop(self) -> None:
        """SIGTERM: each query stops between micro-batches."""
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            process.wait(timeout=120)


class LiveStream:
    """The live join and sink as the board_detail_stream DAG keeps them (the supervisor, each a
    long-lived application on a Spark standalone cluster at ``master``), behind the
    :class:`Supervisor`'s interface; a stream found dead is restarted by the supervisor, and
    counted."""

    JOBS = ("board-detail-join", "board-detail-sink")

    def __init__(self, scenario: Scenario, master: str) -> None:
        self.scenario = scenario
        self.settings = scenario.settings.model_copy(update={"spark_master": master})
        self.before = {job: scenario.batches(job) for job in self.JOBS}
        supervision.start(self.settings)

    def await_batches(self, timeout_s: float = 300) -> None:
        """Until every stream has completed a micro-batch."""
        deadline = time.monotonic() + timeout_s
        while any(self.scenario.batches(job) <= self.before[job] for job in self.JOBS):
            assert time.monotonic() < deadline, f"no batch within {timeout_s:g} s"
            time.sleep(1)

    def run_until(self, done: Callable[[], bool], timeout_s: float = 600) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            assert time.monotonic() < deadline, f"not done after {timeout_s:g} s"
            restarts = sum(s.record.restarts for s in supervision.ensure(self.settings))
            self.scenario.restarts = restarts
            time.sleep(1)

    def stop(self) -> None:
        """After each stream's current batch, as a stop request does."""
        supervision.stop(self.settings)
