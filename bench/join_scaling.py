"""The join's cost against the member table's size, and against its cores: two tables side by side.

    .venv/bin/boardstream stack up
    .venv/bin/python bench/join_scaling.py table-size   # 44,213 / 442,128 / 4,421,280 members
    .venv/bin/python bench/join_scaling.py scale-out    # production backlog, local[1] vs local[2]
    .venv/bin/python bench/join_scaling.py table-size --members 44213 442128 --rate 1000

``table-size``: for each member count, fresh topics hold that many members; the join
(``board-detail-join`` under spark-submit, processing-time trigger, no interval) drains them, then
boards naming members spread over the whole table arrive at ``--rate`` per second for ``--steady``
seconds. From the job's own progress lines it reports the steady batches' duration (median and
p95) and the state operator's part of it, and from the output topic the end-to-end latency (the
board's timestamp to the broker's append time of its ``board-detail`` record). Once the join has
stopped, it times reconciliation's read of the boards waiting in its state (``readers.pending``,
the best of two, in one warm Spark session): it should not grow with the member table.

``scale-out``: one production-scale backlog drained from fresh state with ``local[1]`` and with
``local[2]``; warm records/s is the input over the time from first to last output record.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from backlog import backlog_settings, drop_state, produce_backlog
from compare import Observer, Result, System, boardstream_env, drain, start, stop, tail

from boardstream.kafka.clients import admin_client, reliable_producer
from boardstream.kafka.topics import TopicSpec, create_topics, platform_topics
from boardstream.locations import checkpoint_uri
from boardstream.pipelines import shipped
from boardstream.reconcile.layout import ReconcileLayout
from boardstream.reconcile.reads import readers
from boardstream.reconcile.reads.snapshot import committed_progress
from boardstream.settings import Settings
from boardstream.spark.checkpoint_files import CheckpointFiles
from boardstream.spark.session import spark_session
from boardstream.spark.submit import submit_command
from boardstream.stream_progress import ProgressStore

SHIPPED = ReconcileLayout.of(shipped("board_detail"))

PRODUCTION_MEMBERS = 442_128
ORPHANS = 100
APPEND_TIME = {"message.timestamp.type": "LogAppendTime"}
MEMBER = (
    '{{"member_id":{0},"nickname":"m{0}","city":"Seoul","phone":"010-0000-0000",'
    '"created_at":"2026-01-01T00:00:00","modified_at":"2026-01-01T00:00:00"}}'
)
BOARD = (
    '{{"id":"{0}","member_id":{1},"title":"t","body":"load","created_ts":{2},'
    '"created_at":"2026-01-01T00:00:00","modified_at":"2026-01-01T00:00:00"}}'
)


def join_system(settings: Settings, run_dir: Path, name: str, expected: int, reads: int) -> System:
    """The join (default engine) on ``settings``' topics, from a fresh checkpoint."""
    args = ["--trigger", "processing-time", "--interval", "0 seconds"]
    args += ["--unmatched-timeout", "5s", "--checkpoint", str(run_dir / f"{name}-ckpt")]
    outputs = [settings.board_detail_topic, settings.unmatched_topic, settings.dlq_topic]
    env = boardstream_env(settings, run_dir / name)
    return System(
        name, submit_command(settings, "board-detail-join", args), outputs, expected, reads, env
    )


def produce_members(settings: Settings, count: int) -> None:
    producer = reliable_producer(settings, **{"linger.ms": 20, "batch.size": 1_000_000})
    began = time.time()
    for member_id in range(1, count + 1):
        while True:
            try:
                producer.produce(settings.member_topic, MEMBER.format(member_id), str(member_id))
                break
            except BufferError:
                producer.poll(0.05)
        if member_id % 500_000 == 0:
            print(f"  {member_id:,} members produced after {time.time() - began:.0f} s", flush=True)
    if producer.flush(120):
        raise RuntimeError("members not all delivered")


def consumed(batch: dict, topic: str, which: str = "endOffset") -> int:
    """Records of ``topic`` (all partitions) read up to the start or end of ``batch``."""
    offsets = batch["sources"][0][which] or {}
    return sum(int(v) for v in offsets.get(topic, {}).values())


def progress(run_dir: Path) -> list[dict]:
    """The join's batches, from the database its driver's settings name (its own var dir's)."""
    database = Settings(var_dir=run_dir / "join").database
    return ProgressStore(database).read("board-detail-join")


def latencies(observer: Observer, topic: str, sent: dict[str, int]) -> list[int]:
    """Output append time minus board timestamp, for each sent board found in ``topic``."""
    found: dict[str, int] = {}
    deadline = time.time() + 120
    while len(found) < len(sent) and time.time() < deadline:
        for key, stamp in observer.read([topic]):
            if key in sent:
                found[key] = stamp - sent[key]
        time.sleep(1)
    return list(found.values())


def percentile(values: list[float], cut: int) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[cut - 1] if len(values) > 1 else 0.0
    )


def waiting_read_s(settings: Settings, checkpoint: str) -> tuple[float, int]:
    """Seconds to read the boards waiting in the join's state (its checkpoint's URI) as of its
    last batch (the best of two in one session), and how many wait."""
    spark = spark_session(settings, "bench-join-scaling", progress=False)
    batch = committed_progress(CheckpointFiles(spark), checkpoint).batch_id
    assert batch is not None, f"{checkpoint}: the join committed no batch"
    times = []
    for _ in range(2):
        began = time.perf_counter()
        waiting = readers.pending(spark, SHIPPED, checkpoint, batch).collect()
        times.append(time.perf_counter() - began)
    return min(times), len(waiting)


def table_size(members: int, rate: float, seconds: float) -> dict[str, float]:
    """One member table: drain it, then the steady load; the steady batches and latencies."""
    settings = backlog_settings("scaling", f"t{members}-{time.strftime('%H%M%S')}")
    run_dir = settings.var_dir
    outputs = (settings.board_detail_topic, settings.unmatched_topic, settings.dlq_topic)
    topics = [
        *(t for t in platform_topics(settings) if t.name not in outputs),
        *(
            TopicSpec(t, settings.partitions, settings.replication_factor, APPEND_TIME)
            for t in outputs
        ),
    ]
    create_topics(admin_client(settings), settings, topics)
    run_dir.mkdir(parents=True, exist_ok=True)
    print(f"\n{members:,} members: producing", flush=True)
    produce_members(settings, members)
    system = join_system(settings, run_dir, "join", 0, members)
    process, began = start(system, run_dir / "join.log")
    try:
        while not any(consumed(b, settings.member_topic) >= members for b in progress(run_dir)):
            if process.poll() is not None:
                raise RuntimeError(f"the join exited:\n{tail(run_dir / 'join.log')}")
            time.sleep(2)
        drained_s = time.time() - began
        print(f"  members drained after {drained_s:.0f} s; steady load {rate:,.0f}/s", flush=True)
        producer = reliable_producer(settings, **{"linger.ms": 1})
        rng, sent = random.Random(members), {}
        steady_began = time.time()
        while (elapsed := time.time() - steady_began) < seconds:
            while len(sent) < rate * elapsed:
                board_id, stamp = f"s{len(sent):08d}", int(time.time() * 1000)
                member_id = rng.randint(1, members)
                producer.produce(
                    settings.board_topic,
                    BOARD.format(board_id, member_id, stamp),
                    board_id,
                    timestamp=stamp,
                )
                sent[board_id] = stamp
                producer.poll(0)
            time.sleep(0.01)
        producer.flush(30)
        observed = latencies(Observer(settings), settings.board_detail_topic, sent)
        # Boards of members that never come, so some wait in the state when the join stops
        # (within the 5 s unmatched timeout) for the waiting boards' read below.
        for i in range(ORPHANS):
            producer.produce(settings.board_topic, BOARD.format(f"o{i}", members + 1 + i, 0))
        producer.flush(30)
        time.sleep(3)
    finally:
        stop(process)
    read_s, waiting = waiting_read_s(settings, checkpoint_uri(run_dir / "join-ckpt"))
    batches = [
        b
        for b in progress(run_dir)
        if b["input_rows"] and consumed(b, settings.member_topic, "startOffset") >= members
    ]
    drop_state(settings, ["join"])  # the progress lines were read: they went with the state
    durations = [b["batch_duration_ms"] for b in batches]
    state_ms = [
        sum(op["allUpdatesTimeMs"] + op["commitTimeMs"] for op in b["state_times_ms"])
        for b in batches
    ]
    return {
        "members": members,
        "drain_s": drained_s,
        "batches": len(batches),
        "rows_per_batch": statistics.median(b["input_rows"] for b in batches) if batches else 0,
        "batch_p50_ms": statistics.median(durations) if durations else 0,
        "batch_p95_ms": percentile(durations, 95),
        # Batches grow when one runs long (the next reads what arrived meanwhile): per row, the
        # cost is comparable across tables.
        "ms_per_1k_rows": statistics.median(
            b["batch_duration_ms"] / b["input_rows"] * 1000 for b in batches
        )
        if batches
        else 0,
        "state_p50_ms": statistics.median(state_ms) if state_ms else 0,
        "received": len(observed),
        "sent": len(sent),
        "latency_p50_ms": percentile(observed, 50),
        "latency_p95_ms": percentile(observed, 95),
        "waiting_read_s": read_s,
        "waiting": waiting,
    }


def scale_out(scale: float) -> list[Result]:
    settings, manifest = produce_backlog("scaling", scale, orphans=0, late_members=0)
    boards = sum(n for kind, n in manifest.counts.items() if kind.endswith("boards"))
    reads = boards + sum(n for kind, n in manifest.counts.items() if kind.endswith("members"))
    observer, results = Observer(settings), []
    for master in ("local[1]", "local[2]"):
        fields = ("board_detail_topic", "unmatched_topic", "dlq_topic")
        suffix = master.removeprefix("local[").removesuffix("]")
        own = settings.model_copy(
            update={
                "spark_master": master,
                **{f: f"{getattr(settings, f)}-{suffix}" for f in fields},
            }
        )
        specs = [
            TopicSpec(getattr(own, f), own.partitions, own.replication_factor, APPEND_TIME)
            for f in fields
        ]
        create_topics(admin_client(own), own, specs)
        system = join_system(own, settings.var_dir, master, boards, reads)
        result = Result(master, reads, boards, boards)
        print(f"\n{master}: draining {reads:,} input records", flush=True)
        stop(drain(system, observer, settings.var_dir / f"{suffix}.log", result, 1_800))
        results.append(result)
    drop_state(settings, ["local[1]", "local[2]"])
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["table-size", "scale-out"])
    parser.add_argument(
        "--members", type=int, nargs="+", default=[44_213, PRODUCTION_MEMBERS, 4_421_280]
    )
    parser.add_argument("--rate", type=float, default=3_000.0, help="steady boards/s")
    parser.add_argument("--steady", type=float, default=60.0, help="seconds of steady load")
    parser.add_argument("--scale", type=float, default=1.0, help="scale-out: backlog scale")
    args = parser.parse_args()
    if args.part == "table-size":
        rows = [table_size(m, args.rate, args.steady) for m in args.members]
        print(
            f"\n`bench/join_scaling.py table-size`, {time.strftime('%Y-%m-%d %H:%M')}: "
            f"{args.rate:,.0f} boards/s for {args.steady:.0f} s, boards naming random members\n"
        )
        print(
            "| members | members drained s | steady batches | rows/batch | batch p50 ms"
            " | batch p95 ms | ms per 1,000 rows | state p50 ms | out/sent | latency p50 ms"
            " | p95 ms | per-row cost vs smallest | waiting boards read s (waiting) |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        base = rows[0]["ms_per_1k_rows"] or 1
        for r in rows:
            print(
                f"| {r['members']:,} | {r['drain_s']:.0f} | {r['batches']}"
                f" | {r['rows_per_batch']:,.0f}"
                f" | {r['batch_p50_ms']:,.0f} | {r['batch_p95_ms']:,.0f}"
                f" | {r['ms_per_1k_rows']:,.0f} | {r['state_p50_ms']:,.0f}"
                f" | {r['received']:,}/{r['sent']:,} | {r['latency_p50_ms']:,.0f}"
                f" | {r['latency_p95_ms']:,.0f} | {r['ms_per_1k_rows'] / base:.2f}x"
                f" | {r['waiting_read_s']:.2f} ({r['waiting']:,}) |"
            )
        print(json.dumps(rows))
        return 0 if all(r["received"] == r["sent"] for r in rows) else 1
    results = scale_out(args.scale)
    print(
        f"\n`bench/join_scaling.py scale-out`, {time.strftime('%Y-%m-%d %H:%M')}, "
        f"scale {args.scale:g}\n"
    )
    print("| master | drain s | first output s | records/s | warm records/s | boards out |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r.name} | {r.drain_s:.1f} | {r.first_output_s:.1f} | {r.records_per_s:,.0f}"
            f" | {r.warm_records_per_s:,.0f} | {r.distinct:,} |"
        )
    one, two = results
    print(
        f"\nlocal[2] / local[1]: {two.records_per_s / one.records_per_s:.2f}x (cold), "
        f"{two.warm_records_per_s / one.warm_records_per_s:.2f}x (warm)"
    )
    return 0 if all(r.distinct == r.expected for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
