"""A time-compressed life (issue #47): weeks of a pipeline in minutes.

The live join and sink run under a steady load of new boards, board updates, member updates and
member deletes; every topic's retention and segment roll are minutes, so sources and outputs age
out while it runs; compaction tuning is applied to the member topic half-way; and a
reconciliation runs every minute, as the schedule would. Every run must end PASSED, the evidence
that aged out must be reported as ``expired_evidence``, and at the end the table must hold the
newest version of every board whose member lives (the boards of deleted members are accounted
for by the final run: joined or unmatched).

Both forms are ``long`` (CI leaves them out): the short one (2.5 minutes of load, about 4 in
all) with ``pytest --long tests/faults/test_life.py -k "not life_long"``, the long one (21
minutes) with ``-k life_long``. What each found is held by a shorter test in CI (the
adversarial suite's 29b, 29g and 29h, tests/unit/reconcile/test_snapshot.py). What they found (issue
#47): records retention deleted while a run read them came out ``extra`` (fixed:
``snapshot.retained``); rows whose evidence had aged out failed Great Expectations' row count
(``checks.TABLE_ROWS``); a live sink's rows of records written after a run's snapshot came out
``extra_in_table`` (31 in an incremental run; now ``loaded_ahead``, checked by the next run). Each
run's figures go to ``test-artifacts/reliability.jsonl``.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Producer

from boardstream.settings import Settings
from tests.faults.harness import JOIN_ARGS, SINK_ARGS, Scenario, Supervisor, record
from tests.pipeline import alter_topics, query

SEED = 20261129
UNMATCHED_TIMEOUT = "15s"  # a board of a deleted member waits this long, then is unmatched
STABLE_MEMBERS = 200  # updated, never deleted: their boards' newest versions must be loaded
CHURN_MEMBERS = 40  # created, updated, deleted, created again
SCHEDULE_S = 60.0  # a reconciliation a minute


@dataclass(frozen=True)
class Life:
    load_s: float  # how long the load runs
    retention_ms: int  # retention.ms of board, delete.retention.ms of member
    # retention.ms of board's outputs: shorter, so that outcomes outlive their records while
    # the sources still name them (``expired_evidence``), the case an auditor must see through
    output_retention_ms: int
    segment_ms: int  # segment.ms of every topic: a segment must roll before it can go
    boards_per_s: float


SHORT = Life(
    load_s=150,
    retention_ms=240_000,
    output_retention_ms=120_000,
    segment_ms=15_000,
    boards_per_s=10,
)
LONG = Life(
    load_s=1_260,
    retention_ms=600_000,
    output_retention_ms=300_000,
    segment_ms=30_000,
    boards_per_s=20,
)


@dataclass
class Load:
    """The producer's side of the life: what it sent, for the final comparison."""

    settings: Settings
    life: Life
    seed: int
    newest: dict[str, dict] = field(default_factory=dict)  # board id -> newest stable board
    churn_boards: set[str] = field(default_factory=set)
    member_events: int = 0
    deletes: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.producer = Producer({**self.settings.to_confluent(), "acks": "all"})
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="life-load", daemon=True)
        self.alive: set[int] = set()
        self.error: BaseException | None = None

    def member(self, member_id: int, version: int) -> None:
        payload = {
            "member_id": member_id,
            "nickname": f"m{member_id} v{version}",
            "city": self.rng.choice(["Seoul", "Busan", "Incheon"]),
            "phone": "010-0000-0000",
            "created_at": "2024-12-01T00:00:00",
            "modified_at": f"2025-01-01T00:{version % 60:02d}:00",
        }
        self._send(self.settings.member_topic, str(member_id), json.dumps(payload).encode())
        self.alive.add(member_id)
        self.member_events += 1

    def delete(self, member_id: int) -> None:
        self._send(self.settings.member_topic, str(member_id), None)
        self.alive.discard(member_id)
        self.member_events += 1
        self.deletes += 1

    def board(self, board_id: str, member_id: int, version: int) -> dict:
        now = int(time.time() * 1000)
        payload = {
            "id": board_id,
            "member_id": member_id,
            "title": f"{board_id} v{version}",
            "body": "body " * self.rng.randrange(1, 20),
            "created_ts": now,
            "created_at": "2025-01-02T00:00:00",
            "modified_at": "2025-01-02T00:00:00",
        }
        self._send(self.settings.board_topic, board_id, json.dumps(payload).encode())
        return payload

    def _send(self, topic: str, key: str, value: bytes | None) -> None:
        self.producer.produce(topic, key=key.encode(), value=value)
        self.producer.poll(0)

    def start(self) -> None:
        for member_id in range(1, STABLE_MEMBERS + 1):
            self.member(member_id, 0)
        for member_id in range(1_001, 1_001 + CHURN_MEMBERS):
            self.member(member_id, 0)
        assert self.producer.flush(30) == 0
        self.thread.start()

    def _run(self) -> None:
        """Each tick: a board (new, or a new version of a stable member's board), and now and
        then a member update, delete or re-creation."""
        try:
            versions: dict[str, int] = {}
            interval = 1 / self.life.boards_per_s
            deadline = time.monotonic() + self.life.load_s
            n = 0
            while not self.stopped.is_set() and time.monotonic() < deadline:
                n += 1
                roll = self.rng.random()
                if roll < 0.25 and self.newest:
                    board_id = self.rng.choice(list(self.newest))
                    versions[board_id] += 1
                    member_id = self.newest[board_id]["member_id"]
                    self.newest[board_id] = self.board(board_id, member_id, versions[board_id])
                elif roll < 0.9:
                    board_id, member_id = f"s{n}", self.rng.randrange(1, STABLE_MEMBERS + 1)
                    versions[board_id] = 0
                    self.newest[board_id] = self.board(board_id, member_id, 0)
                else:  # a churn member's board: joined or unmatched, as its member stands
                    board_id = f"c{n}"
                    self.board(board_id, self.rng.randrange(1_001, 1_001 + CHURN_MEMBERS), 0)
                    self.churn_boards.add(board_id)
                if self.rng.random() < 0.15:
                    self._member_event(n)
                time.sleep(interval)
            assert self.producer.flush(30) == 0
        except BaseException as error:  # surfaced by stop()
            self.error = error

    def _member_event(self, n: int) -> None:
        if self.rng.random() < 0.6:
            self.member(self.rng.randrange(1, STABLE_MEMBERS + 1), n)
            return
        member_id = self.rng.randrange(1_001, 1_001 + CHURN_MEMBERS)
        if member_id in self.alive and self.rng.random() < 0.5:
            self.delete(member_id)
        else:
            self.member(member_id, n)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=60)
        assert self.error is None, repr(self.error)
        assert self.producer.flush(30) == 0

    @property
    def running(self) -> bool:
        return self.thread.is_alive()


def age_in_minutes(settings: Settings, life: Life) -> None:
    """Every topic's segments roll in ``segment_ms``; board keeps records for
    ``retention_ms``, its outputs for ``output_retention_ms``; member (compacted) drops
    tombstones after ``retention_ms``."""
    segment = {"segment.ms": str(life.segment_ms)}
    outputs = segment | {"retention.ms": str(life.output_retention_ms)}
    configs = {
        settings.member_topic: segment | {"delete.retention.ms": str(life.retention_ms)},
        settings.board_topic: segment | {"retention.ms": str(life.retention_ms)},
        settings.board_detail_topic: outputs,
        settings.unmatched_topic: outputs,
        settings.dlq_topic: outputs,
    }
    alter_topics(settings, configs)


# The summary's counts each run's figures keep: what aged out, and what was in transit.
KEPT = ("expired_evidence", "source_expired", "unverifiable_in_table", "loaded_ahead")


@dataclass(frozen=True)
class Verdict:
    at_s: float
    returncode: int
    passed: bool
    counts: dict[str, int]  # KEPT, as the summary gives them
    output: str


def reconcile(s: Scenario, started: float) -> Verdict:
    result = s.reconcile("--unmatched-timeout", UNMATCHED_TIMEOUT)
    summary = re.findall(r"^\s+([a-z_]+)\s+([\d,]+)$", result.stdout, re.MULTILINE)
    counts = {kind: int(n.replace(",", "")) for kind, n in summary if kind in KEPT}
    return Verdict(
        at_s=round(time.monotonic() - started, 1),
        returncode=result.returncode,
        passed=result.returncode == 0 and ": PASSED" in result.stdout,
        counts=counts,
        output=result.stdout[-4000:] + result.stderr[-2000:],
    )


def tune_compaction(s: Scenario) -> subprocess.CompletedProcess:
    topic, interval = s.settings.member_topic, f"{SCHEDULE_S:g}s"
    return s.cli(
        "compaction", "apply", "--execute", "--topic", topic, "--reconciliation-interval", interval
    )


def loaded(s: Scenario, load: Load) -> bool:
    """Whether the table holds the newest version of every stable board."""
    rows = query(s.database_url, "select board_id, title from board_detail")
    titles = {board_id: title for board_id, title in rows}
    return all(titles.get(b) == payload["title"] for b, payload in load.newest.items())


def live(s: Scenario, life: Life) -> None:
    age_in_minutes(s.settings, life)
    join = [*JOIN_ARGS, "--unmatched-timeout", UNMATCHED_TIMEOUT]
    jobs = Supervisor(s, {"board-detail-join": join, "board-detail-sink": SINK_ARGS})
    load = Load(s.settings, life, s.seed)
    started = time.monotonic()
    load.start()
    verdicts: list[Verdict] = []
    tuning: subprocess.CompletedProcess | None = None
    next_run = started + SCHEDULE_S
    try:
        while load.running:
            jobs.run_until(lambda due=next_run: time.monotonic() >= due or not load.running)
            if not load.running:
                break
            verdicts.append(reconcile(s, started))
            assert verdicts[-1].passed, verdicts[-1].output
            if tuning is None and time.monotonic() - started >= life.load_s / 2:
                tuning = tune_compaction(s)
                assert tuning.returncode == 0, tuning.stdout[-3000:] + tuning.stderr[-3000:]
            next_run = max(next_run + SCHEDULE_S, time.monotonic() + 1)
        load.stop()
        jobs.run_until(lambda: loaded(s, load), timeout_s=600)
        # Past the unmatched timeout of the last churn boards, so none is still waiting.
        settled = time.monotonic() + 20
        jobs.run_until(lambda: time.monotonic() >= settled)
        verdicts.append(reconcile(s, started))
    finally:
        jobs.stop()
    final = verdicts[-1]
    record(
        scenario=f"time-compressed life ({life.load_s / 60:g} min)",
        seed=s.seed,
        boards=len(load.newest) + len(load.churn_boards),
        member_events=load.member_events,
        member_deletes=load.deletes,
        restarts=s.restarts,
        runs=len(verdicts),
        runs_passed=sum(v.passed for v in verdicts),
        **{kind: [v.counts.get(kind) for v in verdicts] for kind in KEPT},
        compaction_tuned=tuning is not None,
        reconciliation="PASSED" if all(v.passed for v in verdicts) else "FAILED",
    )
    assert final.passed, final.output
    assert tuning is not None and "applied" in tuning.stdout, tuning
    assert load.deletes > 0 and load.churn_boards
    # What aged out was reported as such, never as missing.
    assert max(v.counts["expired_evidence"] for v in verdicts) > 0, [v.counts for v in verdicts]
    table = {b for (b,) in query(s.database_url, "select board_id from board_detail")}
    assert table - load.churn_boards == set(load.newest)
    assert loaded(s, load)


@pytest.mark.long
@pytest.mark.timeout(1_200)
def test_a_time_compressed_life(services, tmp_path: Path) -> None:
    s = Scenario("time-compressed life", services.settings, services.database_url, tmp_path, SEED)
    live(s, SHORT)


@pytest.mark.long
@pytest.mark.timeout(3_600)
def test_a_time_compressed_life_long(services, tmp_path: Path) -> None:
    s = Scenario(
        "time-compressed life (long)", services.settings, services.database_url, tmp_path, SEED
    )
    live(s, LONG)
