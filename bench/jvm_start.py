"""What the drivers' class archive (boardstream/spark/class_archive.py) saves each spark-submit,
side by side in one run, alternating without and with it:

- the warm-up application (a session as jobs build it, a batch aggregation, a stateful streaming
  query on RocksDB run to its end), wall time of its spark-submit;
- with ``--join``: ``board-detail-join --trigger available-now`` over 2,000 boards of topics of
  its own on the stack's broker (``boardstream stack up`` first), its spark-submit's wall time,
  each run on a fresh checkpoint (a cold start, as a DAG run's first).

    .venv/bin/boardstream setup            # builds the archive
    .venv/bin/python bench/jvm_start.py --rounds 3 [--join]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from boardstream.settings import Settings
from boardstream.spark import class_archive
from boardstream.spark.submit import application, run_env, spark_submit, submit_conf


def timed(command: list[str], env: dict[str, str]) -> float:
    began = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - began
    if done.returncode != 0:
        sys.exit(f"{command[-2:]} exited {done.returncode}: {done.stderr[-3000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--join", action="store_true", help="also the join (needs the stack)")
    args = parser.parse_args()
    settings = Settings()
    if args.join:
        topics = ("member", "board", "board_detail", "unmatched", "dlq")
        prefix = f"bench-jvm-{time.time_ns()}"
        settings = settings.model_copy(
            update={f"{name}_topic": f"{prefix}-{name}" for name in topics}
        )
        command = [str(Path(sys.executable).parent / "boardstream")]
        for step in (["topics", "create"], ["produce", "--members", "500", "--boards", "2000"]):
            subprocess.run([*command, *step], env=run_env(settings), check=True)
    archive = class_archive.current_archive(settings.jars_dir)
    if not archive.is_file():
        sys.exit(f"no archive at {archive}: run boardstream setup first")
    env = run_env(settings)
    plain = submit_conf(console=False)
    mapped = class_archive.with_archive(plain, settings.jars_dir)
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for label, conf in (("without", plain), ("with", mapped)):
                work = Path(scratch) / f"{label}-{round_}"
                work.mkdir()
                warm_up = [*spark_submit(settings, "bench", conf), str(class_archive.WARM_UP)]
                times.setdefault(("warm-up", label), []).append(timed([*warm_up, str(work)], env))
                if args.join:
                    join = [
                        *spark_submit(settings, "board-detail-join", conf),
                        str(application("board-detail-join")),
                        "--trigger",
                        "available-now",
                        "--checkpoint",
                        str(work / "join"),
                    ]
                    times.setdefault(("join", label), []).append(timed(join, env))
                print(
                    f"round {round_ + 1} {label}: "
                    + ", ".join(
                        f"{a} {t[-1]:.1f} s" for (a, lb), t in times.items() if lb == label
                    ),
                    flush=True,
                )
    print(f"\narchive {archive.name}: {archive.stat().st_size >> 20} MB")
    print("| application | without s (median) | with s (median) | with / without |")
    print("|---|---:|---:|---:|")
    for app in dict.fromkeys(app for app, _ in times):
        without = statistics.median(times[(app, "without")])
        with_ = statistics.median(times[(app, "with")])
        print(f"| {app} | {without:.1f} | {with_:.1f} | {with_ / without:.2f}x |")


if __name__ == "__main__":
    main()
