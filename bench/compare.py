"""Board ⋈ member side by side: boardstream (both join engines), Kafka Streams, Quix, raw pipe.

    bench/compare            # production scale: 442,128 members, 447,017 boards
    bench/compare --small    # 2 % of that, a few minutes

``bench/compare`` installs and builds what this script needs (venv, the Kafka Streams peer, the
bench venv with Quix Streams) and starts the local broker. The script loads one seeded data set
(0.5 % orphan boards and 0.5 % late members: boards an inner join drops), then runs each system
from fresh state into empty output topics stamped by the broker (LogAppendTime):

1. **drain**: start the system cold; the clock stops at the broker timestamp of its last output
   record; the process tree's RSS is sampled throughout;
2. **steady load**: boards of fresh members at half of boardstream's drain rate for
   ``--steady`` seconds; latency = output append time minus the board's own timestamp;
3. **capacity** (boardstream's two triggers, Kafka Streams, the raw pipe): the highest rate
   it sustains with p99 within 1 s, each rate held ``--capacity-hold`` seconds
   (``capacity.py``); ``--capacity-systems`` with no name leaves it out.

Every output count is checked against the input. One table, with ratios to boardstream, is
printed and written with the machine description into docs/BENCHMARKS.md, next to a PNG chart.
The run's topics and each system's state are deleted at the end (gigabytes at production scale);
its logs and results.json stay in var/bench/<run>; ``--keep`` leaves everything.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

import psutil
from backlog import drop_state, produce_backlog
from capacity import P99_BOUND_MS, Capacity, Step, search
from confluent_kafka import Consumer, TopicPartition
from memory import tree_rss

from boardstream.generator.manifest import Manifest
from boardstream.kafka.clients import admin_client, reliable_producer
from boardstream.kafka.topics import TopicSpec, create_topics, platform_topics
from boardstream.settings import PROJECT_ROOT, Settings
from boardstream.spark.submit import submit_command, submit_env

# boardstream on each join engine (the JVM operator, keyed by member; the Python one, keyed by
# bucket) in micro-batches as fast as they go, the JVM one also under Spark's real-time trigger
# (checkpointing every 5 s), then the peers.
MICRO_BATCHES = ["--trigger", "processing-time", "--interval", "0 seconds"]
BOARDSTREAMS = {
    "boardstream": ["--engine", "jvm", *MICRO_BATCHES],
    "boardstream-realtime": ["--engine", "jvm", "--trigger", "real-time"],
    "boardstream-python": ["--engine", "python", *MICRO_BATCHES],
}
SYSTEMS = (*BOARDSTREAMS, "kafka-streams", "quix-streams", "raw-pipe")
CAPACITY_SYSTEMS = ("boardstream", "boardstream-realtime", "kafka-streams", "raw-pipe")
# After a step's last board, how long its outputs may take: a sustained step's come within 1 s.
STEP_PATIENCE_S = 15.0
PEERS = PROJECT_ROOT / "bench" / "peers"
JAVA_PEER = PEERS / "kafka-streams-join" / "target"
BENCH_PYTHON = PROJECT_ROOT / "var" / "bench" / "venv" / "bin" / "python"
DOC = PROJECT_ROOT / "docs" / "BENCHMARKS.md"
CHART = PROJECT_ROOT / "docs" / "bench-compare.png"
MARKERS = ("<!-- compare:start -->", "<!-- compare:end -->")
SMALL_SCALE = 0.02
STALL_S = 30.0  # an inner join drops boards: its output stops short of the board count
FIRST_OUTPUT_S = 300.0


@dataclass
class System:
    """One contender: how to start it, which topics it writes, how many board ids it owes."""

    name: str
    command: list[str]
    outputs: list[str]
    expected: int
    reads: int  # input records it consumes while draining
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Steady:
    """The steady phase: records sent at the fixed rate, received, and their end-to-end
    latency percentiles."""

    sent: int = 0
    received: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None


@dataclass
class Result:
    name: str
    reads: int
    boards: int
    expected: int
    drain_s: float = 0.0
    first_output_s: float = 0.0
    joined_s: float = 0.0  # the last record of its first output topic: the joined boards
    distinct: int = 0
    duplicates: int = 0
    peak_rss_mb: float = 0.0
    steady: Steady = field(default_factory=Steady)
    capacity: Capacity | None = None
    note: str = ""

    @property
    def records_per_s(self) -> float:
        return self.reads / self.drain_s if self.drain_s else 0.0

    @property
    def warm_records_per_s(self) -> float:
        """The rate once running: input records over the time from first to last output."""
        running = self.drain_s - self.first_output_s
        return self.reads / running if running > 0 else 0.0

    @property
    def warm_joined_per_s(self) -> float:
        """The same rate up to the last joined board, the output every system has: boardstream's
        unmatched boards leave a batch later, when their timeout fires."""
        running = self.joined_s - self.first_output_s
        return self.reads / running if running > 0 else 0.0


class Observer:
    """Reads output topics: their high watermarks (cheap, while a system runs) and, after, every
    record's key and broker timestamp."""

    def __init__(self, settings: Settings) -> None:
        self.consumer = Consumer(
            {**settings.to_confluent(), "group.id": "bench-compare", "enable.auto.commit": False}
        )

    def partitions(self, topics: list[str]) -> list[TopicPartition]:
        return [
            TopicPartition(topic, p)
            for topic in topics
            for p in self.consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ]

    def ends(self, topics: list[str]) -> dict[tuple[str, int], int]:
        return {
            (tp.topic, tp.partition): self.consumer.get_watermark_offsets(tp, timeout=10)[1]
            for tp in self.partitions(topics)
        }

    def read(
        self, topics: list[str], start: dict[tuple[str, int], int] | None = None
    ) -> list[tuple[str, int]]:
        """(key, broker timestamp ms) of every record from ``start`` (default: the beginning)."""
        return self.read_to(topics, self.ends(topics), start)

    def read_to(
        self,
        topics: list[str],
        ends: dict[tuple[str, int], int],
        start: dict[tuple[str, int], int] | None = None,
    ) -> list[tuple[str, int]]:
        """(key, broker timestamp ms) of every record from ``start`` up to ``ends``."""
        todo = {tp: end for tp, end in ends.items() if end > (start or {}).get(tp, 0)}
        if not todo:
            return []
        self.consumer.assign([TopicPartition(t, p, (start or {}).get((t, p), 0)) for t, p in todo])
        records: list[tuple[str, int]] = []
        while todo:
            for message in self.consumer.consume(10_000, timeout=1.0):
                if message.error():
                    raise RuntimeError(f"reading outputs: {message.error()}")
                tp = (message.topic(), message.partition())
                if message.offset() >= ends[tp]:
                    continue  # written after this read began: the next read's
                records.append((message.key().decode(), message.timestamp()[1]))
                if tp in todo and message.offset() + 1 >= todo[tp]:
                    del todo[tp]
        self.consumer.unassign()
        return records


def start(system: System, log: Path) -> tuple[subprocess.Popen, float]:
    began = time.time()
    process = subprocess.Popen(
        system.command,
        env={**os.environ, **system.env},
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: stopping it stops its children
    )
    return process, began


def stop(process: subprocess.Popen) -> None:
    """Stop a contender as its operator would: its child processes first (spark-submit's Python
    driver stops its query and the JVM then exits; a SIGTERM to the JVM itself would shut Spark
    down under a running batch, which Spark logs at ERROR), then its whole process group."""
    with contextlib.suppress(psutil.Error, subprocess.TimeoutExpired):
        children = psutil.Process(process.pid).children()
        for child in children:
            child.terminate()
        if children:
            process.wait(30)
    for sig, wait_s in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        if process.poll() is not None:
            return
        os.killpg(process.pid, sig)
        try:
            process.wait(wait_s)
        except subprocess.TimeoutExpired:
            continue


def tail(log: Path, lines: int = 15) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def drain(
    system: System, observer: Observer, log: Path, result: Result, timeout_s: float
) -> subprocess.Popen:
    """Start ``system`` and wait until it wrote every board it owes (or its output stalls)."""
    process, began = start(system, log)
    tree = psutil.Process(process.pid)
    peak, count, last_growth, last_report = 0, 0, time.time(), time.time()
    while True:
        time.sleep(0.5)
        if process.poll() is not None:
            raise RuntimeError(f"{system.name} exited with {process.returncode}:\n{tail(log)}")
        peak = max(peak, tree_rss(tree))
        now, seen = time.time(), sum(observer.ends(system.outputs).values())
        if seen > count:
            count, last_growth = seen, now
        if now - last_report >= 5:
            last_report = now
            eta = (now - began) / count * (system.expected - count) if count else float("nan")
            print(
                f"  {system.name}: {count:,}/{system.expected:,} output records after"
                f" {now - began:.0f} s, RSS {peak / 2**20:,.0f} MB, ETA {eta:.0f} s",
                flush=True,
            )
        if count >= system.expected:
            break
        if now - last_growth > (STALL_S if count else FIRST_OUTPUT_S):
            result.note = f"output stopped at {count:,} records"
            break
        if now - began > timeout_s:
            result.note = f"timed out after {timeout_s:.0f} s at {count:,} records"
            break
    per_topic = [observer.read([topic]) for topic in system.outputs]  # each read once
    records = [record for topic in per_topic for record in topic]
    keys = [key for key, _ in records]
    stamps = [stamp for _, stamp in records]
    result.distinct = len(set(keys))
    result.duplicates = len(keys) - result.distinct
    if stamps:
        result.drain_s = max(stamps) / 1000 - began
        result.first_output_s = min(stamps) / 1000 - began
        joined = [stamp for _, stamp in per_topic[0]]
        result.joined_s = max(joined, default=0) / 1000 - began
    result.peak_rss_mb = peak / 2**20
    return process


class LoadProducer:
    """Members and boards of the steady phase, each board stamped with the time it was sent."""

    def __init__(self, settings: Settings, system: str, first_member: int, members: int) -> None:
        self.settings, self.system = settings, system
        self.producer = reliable_producer(settings, **{"linger.ms": 1})
        self.member_ids = [first_member + i for i in range(members)]
        self.sent: dict[str, int] = {}
        for member_id in self.member_ids:
            member = {"member_id": member_id, "nickname": f"steady{member_id}", "city": "Seoul"}
            member |= {"phone": "010-0000-0000", "created_at": "2026-01-01T00:00:00"}
            member |= {"modified_at": "2026-01-01T00:00:00"}
            self.producer.produce(
                settings.member_topic, json.dumps(member).encode(), str(member_id)
            )
        self.producer.flush(30)

    def board(self, kind: str) -> str:
        board_id = f"{kind}-{self.system}-{len(self.sent):08d}"
        stamp = int(time.time() * 1000)
        board = {
            "id": board_id,
            "member_id": self.member_ids[len(self.sent) % len(self.member_ids)],
        }
        board |= {"title": kind, "body": "load", "created_ts": stamp}
        board |= {"created_at": "2026-01-01T00:00:00", "modified_at": "2026-01-01T00:00:00"}
        self.producer.produce(
            self.settings.board_topic, json.dumps(board).encode(), board_id, timestamp=stamp
        )
        self.sent[board_id] = stamp
        self.producer.poll(0)
        return board_id


def caught_up(system: System, observer: Observer, load: LoadProducer, log: Path) -> None:
    """A probe board a second until one comes out: the restarted system has read its backlog
    (the other systems' steady boards) and its new members."""
    before, deadline = observer.ends(system.outputs), time.time() + 600
    while time.time() < deadline:
        load.board("probe")
        load.producer.flush(10)
        time.sleep(1)
        mine = f"probe-{system.name}-"
        if any(key.startswith(mine) for key, _ in observer.read(system.outputs, before)):
            time.sleep(2)
            return
    raise RuntimeError(f"{system.name} wrote no probe within 600 s:\n{tail(log)}")


def await_outputs(
    system: System,
    observer: Observer,
    position: dict[tuple[str, int], int],
    sent: dict[str, int],
    patience_s: float = 120.0,
) -> dict[str, int]:
    """Latency (ms) of each sent board whose output arrived; gives up ``patience_s`` after the
    load ended (a system slower than the load is still working through its backlog)."""
    received: dict[str, int] = {}
    deadline = time.time() + patience_s
    while len(received) < len(sent) and time.time() < deadline:
        ends = observer.ends(system.outputs)
        for key, stamp in observer.read_to(system.outputs, ends, position):
            if key in sent:
                received[key] = stamp - sent[key]
        position = ends
        time.sleep(1)
    return received


def steady(
    system: System,
    index: int,
    settings: Settings,
    observer: Observer,
    result: Result,
    rate: float,
    seconds: float,
    log: Path,
) -> None:
    """Restart the drained system, then boards of fresh members at ``rate``/s for ``seconds``;
    latency from each board's own timestamp to the broker's append time of its output."""
    members = max(1, min(1_000, round(rate)))
    load = LoadProducer(settings, system.name, 50_000_000 + index * 1_000_000, members)
    process, _ = start(system, log)
    try:
        caught_up(system, observer, load, log)
        before = observer.ends(system.outputs)
        send_for(load, "steady", rate, seconds)
        load.producer.flush(30)
        sent = {key: stamp for key, stamp in load.sent.items() if key.startswith("steady-")}
        received = await_outputs(system, observer, before, sent)
    finally:
        stop(process)
    latencies = list(received.values())
    result.steady.sent, result.steady.received = len(sent), len(latencies)
    if len(latencies) >= 2:
        cuts = statistics.quantiles(latencies, n=100, method="inclusive")
        result.steady.p50_ms, result.steady.p95_ms, result.steady.p99_ms = (
            cuts[49],
            cuts[94],
            cuts[98],
        )


def send_for(load: LoadProducer, kind: str, rate: float, seconds: float) -> float:
    """``rate * seconds`` boards, each sent when due; the rate the producer achieved."""
    total, began, sent = round(rate * seconds), time.time(), 0
    while sent < total:
        due = min(total, rate * (time.time() - began))
        while sent < due:
            load.board(kind)
            sent += 1
        time.sleep(0.005)
    return sent / (time.time() - began)


def capacity(
    system: System,
    index: int,
    settings: Settings,
    observer: Observer,
    result: Result,
    hold_s: float,
    start_rate: float,
    log: Path,
) -> None:
    """Restart the system, then search for the highest rate it sustains (``capacity.py``); a
    failed step's backlog is worked off before the next."""
    load = LoadProducer(settings, system.name, 70_000_000 + index * 1_000_000, 1_000)
    process, _ = start(system, log)
    try:
        caught_up(system, observer, load, log)

        def hold(rate: float) -> Step:
            kind = f"cap{len(load.sent)}"
            before = observer.ends(system.outputs)
            achieved = send_for(load, kind, rate, hold_s)
            load.producer.flush(30)
            sent = {key: stamp for key, stamp in load.sent.items() if key.startswith(f"{kind}-")}
            latencies = list(
                await_outputs(system, observer, before, sent, STEP_PATIENCE_S).values()
            )
            p99 = (
                statistics.quantiles(latencies, n=100, method="inclusive")[98]
                if len(latencies) >= 2
                else None
            )
            step = Step(rate, achieved, len(sent), len(latencies), p99)
            verdict = "sustained" if step.sustained else "not sustained"
            print(
                f"  {system.name}: {rate:,.0f} boards/s asked, {achieved:,.0f} sent, "
                f"{step.received:,}/{step.sent:,} out, p99 "
                f"{'-' if p99 is None else f'{p99:,.0f}'} ms: {verdict}",
                flush=True,
            )
            if not step.sustained:
                caught_up(system, observer, load, log)
            return step

        result.capacity = search(hold, start_rate, ceiling=start_rate * 64)
    finally:
        stop(process)


def recorded(result: Result, phase: Callable[[], None]) -> None:
    """Run a phase; a system that fails it gets a note, and the run goes on to the others."""
    try:
        phase()
    except RuntimeError as error:
        result.note = " ".join(f"{result.note} {str(error).splitlines()[0]}".split())
        print(f"  {result.name}: {error}", flush=True)


def stamped_outputs(settings: Settings, contenders: list[System]) -> list[TopicSpec]:
    """The contenders' output topics, each record stamped by the broker as it is appended."""
    return [
        TopicSpec(
            topic,
            settings.partitions,
            settings.replication_factor,
            {"message.timestamp.type": "LogAppendTime"},
        )
        for system in contenders
        for topic in system.outputs
    ]


def boardstream_env(settings: Settings, var_dir: Path) -> dict[str, str]:
    """The job's own settings, as the environment spark-submit passes on to it."""
    names = ("member_topic", "board_topic", "board_detail_topic", "unmatched_topic", "dlq_topic")
    return {
        **submit_env(settings),
        "BOARDSTREAM_VAR_DIR": str(var_dir),
        "BOARDSTREAM_JAR_CACHE": str(settings.jars_dir),
        **{f"BOARDSTREAM_{name.upper()}": getattr(settings, name) for name in names},
    }


def systems(
    settings: Settings,
    run_dir: Path,
    counts: dict[str, int],
    join_args: list[str],
    real_time_interval: str,
) -> list[System]:
    """The four contenders on the same input topics, each with its own output and fresh state."""
    boards = sum(n for kind, n in counts.items() if kind.endswith("boards"))
    reads = boards + sum(n for kind, n in counts.items() if kind.endswith("members"))
    inner = counts.get("boards", 0)  # an inner join drops late and orphan boards
    bootstrap, member, board = (
        settings.bootstrap_servers,
        settings.member_topic,
        settings.board_topic,
    )
    classpath = f"{JAVA_PEER / 'kafka-streams-join-1.jar'}:{JAVA_PEER / 'dependency' / '*'}"
    java = ["java", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath]
    join_args = [*join_args, "--unmatched-timeout", "5s"]

    def peer(name: str, main: list[str], expected: int, input_records: int) -> System:
        out, group = f"{board}-out-{name}", f"{board}-{name}"
        args = [bootstrap, board, out, group]
        if main[-1] != "io.boardstream.bench.RawPipe":
            args = [bootstrap, member, board, out, group, str(run_dir / name)]
        return System(name, [*main, *args], [out], expected, input_records)

    def boardstream(name: str, options: list[str]) -> System:
        """One way of running the join into its own copy of the output topics, from its own
        checkpoint. Real-time mode runs every source and shuffle partition's task at once."""
        fields = ("board_detail_topic", "unmatched_topic", "dlq_topic")
        suffix = name.removeprefix("boardstream").removeprefix("-") or "jvm"
        update: dict[str, object] = {f: f"{getattr(settings, f)}-{suffix}" for f in fields}
        if "real-time" in options:
            update["spark_master"] = f"local[{real_time_slots(settings)}]"
        own = settings.model_copy(update=update)
        args = [*join_args, *options, "--checkpoint", str(run_dir / f"{name}-ckpt")]
        if "real-time" in options:
            args += ["--interval", real_time_interval]
        command = submit_command(own, "board-detail-join", args)
        topics = [getattr(own, f) for f in fields]
        return System(name, command, topics, boards, reads, boardstream_env(own, run_dir / name))

    return [
        *(boardstream(name, options) for name, options in BOARDSTREAMS.items()),
        peer("kafka-streams", [*java, "io.boardstream.bench.BoardDetailJoin"], inner, reads),
        peer(
            "quix-streams",
            [str(BENCH_PYTHON), str(PEERS / "quix-streams-join" / "join.py")],
            inner,
            reads,
        ),
        peer("raw-pipe", [*java, "io.boardstream.bench.RawPipe"], boards, boards),
    ]


def real_time_slots(settings: Settings) -> int:
    """A task per partition of the join's sources (member, board, tick) and per shuffle
    partition, all running at once."""
    sources = settings.topic_partitions(settings.member_topic) + settings.topic_partitions(
        settings.board_topic
    )
    return sources + 1 + settings.partitions  # the tick topic has one partition


def ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.2f}x" if value and base else "-"


def table(results: list[Result]) -> str:
    base = results[0] if results and results[0].name == "boardstream" else None
    lines = [
        "| system | drain s | first output s | records/s | warm records/s | warm, joined"
        " | vs boardstream"
        " | boards out | dropped | duplicates | peak RSS MB | steady out/sent | p50 ms | p95 ms"
        " | p99 ms | capacity boards/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        dropped, s = r.boards - r.distinct, r.steady
        cells = [
            r.name,
            f"{r.drain_s:.1f}",
            f"{r.first_output_s:.1f}",
            f"{r.records_per_s:,.0f}",
            f"{r.warm_records_per_s:,.0f}",
            f"{r.warm_joined_per_s:,.0f}",
            ratio(r.records_per_s, base.records_per_s if base else None),
            f"{r.distinct:,}",
            f"{dropped:,}",
            f"{r.duplicates:,}",
            f"{r.peak_rss_mb:,.0f}",
            f"{s.received:,}/{s.sent:,}",
            *(f"{v:,.0f}" if v is not None else "-" for v in (s.p50_ms, s.p95_ms, s.p99_ms)),
            capacity_cell(r.capacity),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def capacity_cell(found: Capacity | None) -> str:
    """The sustained rate: "≥" for a lower bound, "<" when not even the first rate held."""
    if found is None or not found.steps:
        return "-"
    if found.rate is None:
        return f"< {min(step.rate for step in found.steps):,.0f}"
    return f"{'≥ ' if found.at_least else ''}{found.rate:,.0f}"


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory = psutil.virtual_memory().total / 2**30
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return (
        f"{cpu}, {os.cpu_count()} cores, {memory:.0f} GiB RAM, {platform.system()} "
        f"{platform.release()}; Python {platform.python_version()}, "
        f"{java.splitlines()[0] if java else 'java ?'}; one local Kafka 4.1.1 broker (KRaft)"
    )


def write_docs(report: str) -> None:
    """Replace the comparison section of docs/BENCHMARKS.md (between its markers)."""
    text = DOC.read_text()
    begin, end = MARKERS
    section = f"{begin}\n{report}\n{end}"
    if begin in text:
        text = text[: text.index(begin)] + section + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    DOC.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    scale = parser.add_mutually_exclusive_group()
    scale.add_argument("--scale", type=float, default=1.0, help="fraction of production scale")
    scale.add_argument("--small", action="store_const", const=SMALL_SCALE, dest="scale")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--steady", type=float, default=60.0, help="seconds of steady load")
    parser.add_argument(
        "--rate", type=float, help="steady boards/s (default: half of boardstream's drain rate)"
    )
    parser.add_argument(
        "--real-time-interval",
        default="30 seconds",
        help="boardstream-realtime's checkpoint interval (records do not wait for it)",
    )
    parser.add_argument(
        "--capacity-systems",
        nargs="*",
        choices=SYSTEMS,
        default=list(CAPACITY_SYSTEMS),
        help="the systems whose capacity is searched (none: no capacity phase)",
    )
    parser.add_argument(
        "--capacity-hold", type=float, default=30.0, help="seconds each rate of the search holds"
    )
    parser.add_argument("--timeout", type=float, default=1_800.0, help="per system drain limit")
    parser.add_argument(
        "--join-arg",
        action="append",
        default=[],
        help="extra board-detail-join option, e.g. --join-arg=--state-buckets=128",
    )
    parser.add_argument(
        "--keep", action="store_true", help="leave the run's topics and state in place"
    )
    args = parser.parse_args()
    if args.rate is None and "boardstream" not in args.systems:
        parser.error("--rate is needed when boardstream is not among --systems")
    boards_each = round(447_017 * args.scale)
    settings, manifest = produce_backlog(
        "compare",
        args.scale,
        orphans=round(boards_each * 0.005),
        late_members=round(boards_each * 0.005),
    )
    try:
        return compare(args, settings, manifest)
    finally:
        if args.keep:
            print(f"kept: the topics and state of {settings.var_dir}")
        else:
            drop_state(settings, [*SYSTEMS, "capacity"])  # capacity/: each system's own run


def compare(args: argparse.Namespace, settings: Settings, manifest: Manifest) -> int:
    """Drain, then steady load, for each system; the table, chart and docs."""
    run_dir = settings.var_dir
    observer = Observer(settings)
    contenders = [
        s
        for s in systems(settings, run_dir, manifest.counts, args.join_arg, args.real_time_interval)
        if s.name in args.systems
    ]
    create_topics(admin_client(settings), settings, stamped_outputs(settings, contenders))
    boards = sum(n for kind, n in manifest.counts.items() if kind.endswith("boards"))
    results: list[Result] = []
    for system in contenders:
        print(f"\n{system.name}: draining {system.reads:,} input records", flush=True)
        result = Result(system.name, system.reads, boards, system.expected)
        stop(drain(system, observer, run_dir / f"{system.name}.log", result, args.timeout))
        print(f"  drained in {result.drain_s:.1f} s", flush=True)
        results.append(result)
    rate = args.rate or results[0].records_per_s / 2
    for index, (system, result) in enumerate(zip(contenders, results, strict=True)):
        print(f"\n{system.name}: steady load, {rate:,.0f} boards/s for {args.steady:.0f} s")
        log = run_dir / f"{system.name}-steady.log"
        recorded(
            result,
            partial(steady, system, index, settings, observer, result, rate, args.steady, log),
        )
        print(table([result]).splitlines()[-1], flush=True)
    for index, result in enumerate(results):
        if result.name not in args.capacity_systems:
            continue
        # Its own topics and fresh state: millions of boards in the shared topics would be a
        # backlog for every system restarted after it.
        own = settings.with_topic_prefix(
            f"{settings.member_topic.removesuffix('-member')}-cap-{result.name}"
        )
        [system] = [
            s
            for s in systems(
                own, run_dir / "capacity", manifest.counts, args.join_arg, args.real_time_interval
            )
            if s.name == result.name
        ]
        admin = admin_client(own)
        create_topics(admin, own, [*platform_topics(own), *stamped_outputs(own, [system])])
        print(f"\n{system.name}: capacity, each rate held {args.capacity_hold:.0f} s", flush=True)
        log = run_dir / f"{system.name}-capacity.log"
        recorded(
            result,
            partial(
                capacity, system, index, own, Observer(own), result, args.capacity_hold, rate, log
            ),
        )
        print(table([result]).splitlines()[-1], flush=True)
    members = manifest.counts.get("members", 0) + manifest.counts.get("late_members", 0)
    orphans, late = manifest.counts.get("orphan_boards", 0), manifest.counts.get("late_boards", 0)
    report = "\n".join(
        [
            f"`bench/compare.py`, {time.strftime('%Y-%m-%d %H:%M')}; scale {args.scale:g}: "
            f"{members:,} members, {boards:,} boards ({orphans:,} orphans, {late:,} of late "
            f"members); steady load {rate:,.0f} boards/s for {args.steady:.0f} s; capacity: "
            f"the highest rate sustained with p99 ≤ {P99_BOUND_MS:,.0f} ms, each rate held "
            f"{args.capacity_hold:.0f} s.",
            "",
            f"Machine: {machine()}.",
            "",
            table(results),
            "",
            *(f"- {r.name}: {r.note}" for r in results if r.note),
            *(
                f"- {r.name}'s capacity search: {r.capacity.note}"
                for r in results
                if r.capacity and r.capacity.note
            ),
            f"![throughput and latency]({CHART.name})",
        ]
    )
    print("\n" + report)
    (run_dir / "results.json").write_text(json.dumps([asdict(r) for r in results], indent=2))
    subprocess.run(
        [
            str(BENCH_PYTHON),
            str(PEERS.parent / "chart.py"),
            str(run_dir / "results.json"),
            str(CHART),
        ],
        check=True,
    )
    write_docs(report)
    # Each really ran: boardstream and the pipe account for every board; an inner join for at
    # least every board whose member came first (it may also catch some of the late ones).
    failures = [r.name for r in results if r.distinct < r.expected or r.distinct > r.boards]
    if failures:
        print(f"compare: {', '.join(failures)} wrote fewer boards than owed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
