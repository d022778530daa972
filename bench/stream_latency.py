"""The live stream on the local Spark standalone cluster against the available-now pipeline:
boards at a steady rate, latency from each board's timestamp to its row committed in
``board_detail``.

    .venv/bin/boardstream stack up --spark-cluster     # BOARDSTREAM_SPARK_WORKER_CORES >= 3
    .venv/bin/python bench/stream_latency.py --rate 1000 --seconds 300
    .venv/bin/python bench/stream_latency.py --attach     # the streams Airflow runs (README)

Live: the join and the sink started by the supervisor (as the ``board_detail_stream`` DAG does),
each a long-lived application on the cluster; boards are sent at ``--rate`` for ``--seconds`` and
a poller notes when each board's row is first seen in the table (every ``--poll-ms``: latencies
are upper bounds by that much). Available-now: the same kind of load for the same time with no
job running, then the join and the sink spark-submitted once each, as one run of the
``board_detail_pipeline`` DAG does (it runs every 10 minutes, so a board waits up to 10 minutes
more for it to start: not counted here). With ``--attach``, the streams already running on the
stack the settings name (as the README's live stream starts them, under Airflow) are measured on
the platform's own topics and table: nothing is started or stopped.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import sqlalchemy as sa
from backlog import backlog_settings
from compare import LoadProducer, send_for

from boardstream import database, supervision
from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import create_topics, platform_topics
from boardstream.settings import Settings
from boardstream.sink import table as sink_table
from boardstream.spark.submit import run_submit
from boardstream.stack.spark_cluster import SparkMaster, master_state
from boardstream.supervision import StreamOptions


class TablePoller:
    """When each board sent is first seen in board_detail (epoch ms), polled every ``poll_ms``
    on a thread of its own: the boards not seen yet, looked up by key (the table is stored in
    board id order, with no insertion order to follow)."""

    def __init__(self, settings: Settings, load: LoadProducer, poll_ms: int) -> None:
        self.engine = sa.create_engine(settings.database)
        self.load = load
        self.poll_s = poll_ms / 1000
        self.seen: dict[str, int] = {}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        table = sink_table.board_detail
        while not self.stopped.is_set():
            unseen = [key for key in list(self.load.sent) if key not in self.seen]
            found: list[str] = []
            try:
                with self.engine.connect() as connection:
                    # No table before the sink's first batch: nothing seen yet.
                    if sa.inspect(connection).has_table(table.name):
                        for chunk in database.chunks(unseen):
                            query = sa.select(table.c.board_id).where(table.c.board_id.in_(chunk))
                            found += connection.execute(query).scalars()
            except sa.exc.OperationalError:  # busy or away for a moment: polled again
                found = []
            now = int(time.time() * 1000)
            for board_id in found:
                self.seen.setdefault(board_id, now)
            time.sleep(self.poll_s)

    def __enter__(self) -> TablePoller:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopped.set()
        self.thread.join()


def send_steadily(load: LoadProducer, kind: str, rate: float, seconds: float) -> dict[str, int]:
    send_for(load, kind, rate, seconds)
    load.producer.flush(30)
    return {key: stamp for key, stamp in load.sent.items() if key.startswith(f"{kind}-")}


def latencies(sent: dict[str, int], seen: dict[str, int]) -> tuple[int, list[int]]:
    found = [seen[key] - stamp for key, stamp in sent.items() if key in seen]
    return len(sent) - len(found), found


def quantiles(values: list[int]) -> str:
    if len(values) < 2:
        return "n/a"
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return f"{cuts[49]:,.0f} / {cuts[94]:,.0f} / {cuts[98]:,.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0, help="boards per second")
    parser.add_argument("--seconds", type=float, default=300.0, help="how long the load lasts")
    parser.add_argument("--poll-ms", type=int, default=200, help="how often the table is read")
    parser.add_argument("--trigger", default="processing-time", help="the live join's trigger")
    parser.add_argument(
        "--interval", default=StreamOptions.interval, help="the live join's interval"
    )
    parser.add_argument(
        "--sink-interval", default=StreamOptions.sink_interval, help="the live sink's interval"
    )
    parser.add_argument(
        "--live-only", action="store_true", help="leave out the available-now comparison"
    )
    parser.add_argument(
        "--attach",
        action="store_true",
        help="measure the live streams already running on the settings' stack (started by "
        "Airflow), on its own topics and table; implies --live-only",
    )
    args = parser.parse_args()

    if args.attach:
        settings = Settings()
    else:
        base = backlog_settings("bench-stream", time.strftime("%Y%m%d%H%M%S"))
        settings = base.model_copy(update={"spark_master": SparkMaster(base).address})
    state = master_state(settings)
    if state is None or not state["workers"]:
        parser.error("no Spark cluster answers: run `boardstream stack up --spark-cluster`")
    if not args.attach:
        create_topics(admin_client(settings), settings, platform_topics(settings))
    # Attached, the table may hold an earlier run's boards: this run's ids are its own.
    system = f"attached{time.strftime('%H%M%S')}" if args.attach else "stream"
    load = LoadProducer(settings, system, 1, members=1_000)

    options = StreamOptions(args.trigger, args.interval, args.sink_interval)
    began = time.time()
    if not args.attach:
        print(f"live: starting the streams on {settings.spark_master}", flush=True)
        supervision.start(settings, options)
    with TablePoller(settings, load, args.poll_ms) as poller:
        probe = send_steadily(load, "probe", 10, 1)
        deadline = time.time() + 600
        while not all(key in poller.seen for key in probe):
            if time.time() > deadline:
                print("live: the probe boards were not loaded within 600 s", flush=True)
                return 1
            time.sleep(0.5)
        ready_s = time.time() - began
        print(f"live: probe boards loaded after {ready_s:.1f} s; steady load", flush=True)
        live_sent = send_steadily(load, "live", args.rate, args.seconds)
        deadline = time.time() + 120
        while not all(k in poller.seen for k in live_sent) and time.time() < deadline:
            time.sleep(0.5)
    if not args.attach:
        supervision.stop(settings)
    live_missing, live = latencies(live_sent, poller.seen)
    how = (
        "as Airflow started it"
        if args.attach
        else (f"{args.trigger}, join {args.interval}, sink {args.sink_interval}")
    )
    live_row = (
        f"| live stream ({how}) | {len(live_sent):,} | {live_missing:,} | {quantiles(live)} |"
    )
    print(live_row, flush=True)

    if args.live_only or args.attach:
        return 0 if live_missing == 0 else 1
    print("available-now: the same load with no job running, then one pipeline run", flush=True)
    with TablePoller(settings, load, args.poll_ms) as poller:
        batch_sent = send_steadily(load, "batch", args.rate, args.seconds)
        batch_began = time.time()
        for job in ("board-detail-join", "board-detail-sink"):
            code = run_submit(settings, job, ["--trigger=available-now"])
            if code != 0:
                raise SystemExit(f"{job} exited {code}")
        batch_s = time.time() - batch_began
        time.sleep(args.poll_ms / 1000 * 3)
    batch_missing, batch = latencies(batch_sent, poller.seen)

    print(
        f"\n{args.rate:,.0f} boards/s for {args.seconds:,.0f} s, table polled every "
        f"{args.poll_ms} ms, cluster {settings.spark_master}"
    )
    print("| mode | boards | not loaded | p50 / p95 / p99 ms (board timestamp → row) |")
    print("|---|---:|---:|---|")
    print(live_row)
    print(
        f"| available-now run after the load ({batch_s:.0f} s: join + sink) | "
        f"{len(batch_sent):,} | {batch_missing:,} | {quantiles(batch)} |"
    )
    print(f"\nlive streams ready {ready_s:.1f} s after their start")
    return 0 if live_missing == 0 and batch_missing == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
