"""Where a JVM's time went: the hottest methods and threads of a Java Flight Recorder recording.

    export SPARK_SUBMIT_OPTS=-XX:StartFlightRecording=filename=var/rt.jfr,dumponexit=true
    .venv/bin/python bench/compare.py --systems boardstream-realtime --scale 0.3 --keep
    .venv/bin/python bench/jfr_hot.py var/rt.jfr [--thread executor] [--top 25]

JFR samples running Java threads (every 20 ms; ``settings=profile``: 10 ms); a method's *self* share
is the samples whose top frame it is, its *total* share those it is anywhere in. The JDK's own
``jfr`` tool reads the recording; nothing else is installed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path


def samples(recording: Path) -> list[dict]:
    jfr = shutil.which("jfr") or str(Path(shutil.which("java") or "java").resolve().parent / "jfr")
    printed = subprocess.run(
        [jfr, "print", "--json", "--stack-depth", "64", "--events", "jdk.ExecutionSample",
         str(recording)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(printed.stdout)["recording"]["events"]


def frame_name(frame: dict) -> str:
    method = frame["method"]
    return f"{method['type']['name']}.{method['name']}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recording", type=Path)
    parser.add_argument("--thread", default="", help="only threads whose name contains this")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()

    events = [
        e
        for e in samples(args.recording)
        if args.thread in (e["values"].get("sampledThread") or {}).get("javaName", "")
    ]
    threads: Counter[str] = Counter()
    own: Counter[str] = Counter()
    anywhere: Counter[str] = Counter()
    for event in events:
        values = event["values"]
        threads[(values.get("sampledThread") or {}).get("javaName", "?")] += 1
        frames = [frame_name(f) for f in (values.get("stackTrace") or {}).get("frames", [])]
        if frames:
            own[frames[0]] += 1
            anywhere.update(set(frames))
    total = len(events) or 1
    print(f"{len(events):,} samples")
    for title, counts in (("threads", threads), ("self", own), ("total", anywhere)):
        print(f"\n{title}:")
        for name, count in counts.most_common(args.top):
            print(f"  {100 * count / total:5.1f} %  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
