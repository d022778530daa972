"""One benchmark at two commits, interleaved in one sitting: is a change within noise?

    .venv/bin/boardstream stack up
    .venv/bin/python bench/ab.py --before 4bd1a04 --after b789606 --rounds 3 \\
        --figure '\\| end to end \\| [\\d,]+ \\| ([\\d.]+) \\|' -- bench/join_backlog.py --scale 0.2

Each commit is checked out in its own worktree (``var/bench/ab/<commit>``) and the benchmark
script runs there, with this venv and the shared jar cache, alternating before/after for
``--rounds`` rounds so that a drift of the machine hits both alike. ``--figure`` is a regular
expression whose first group is the figure (seconds) in the script's output. It prints every
run's figure, each side's median and spread, and after/before.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from boardstream.settings import PROJECT_ROOT, Settings

WORKTREES = PROJECT_ROOT / "var" / "bench" / "ab"


def worktree(commit: str) -> Path:
    """A checkout of ``commit`` (made once, kept for later runs)."""
    sha = subprocess.run(
        ["git", "rev-parse", "--short", commit],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    path = WORKTREES / sha
    if not path.exists():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(path), sha], cwd=PROJECT_ROOT, check=True
        )
    return path


def run(tree: Path, script: list[str], figure: re.Pattern[str]) -> float:
    """The script at ``tree``'s commit: its package first on the path, the jars from here."""
    env = {
        **os.environ,
        "PYTHONPATH": f"{tree}{os.pathsep}{tree / 'bench'}",
        "BOARDSTREAM_JAR_CACHE": str(Settings().jars_dir),
    }
    done = subprocess.run(
        [sys.executable, *script], cwd=tree, env=env, capture_output=True, text=True
    )
    found = figure.search(done.stdout)
    if done.returncode or not found:
        raise SystemExit(
            f"ab: {' '.join(script)} at {tree.name} exited with {done.returncode}"
            f"{'' if found else ' without the figure'}:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
        )
    return float(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="commit")
    parser.add_argument("--after", default="HEAD", help="commit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--figure", required=True, type=re.compile, help="regex, group 1")
    parser.add_argument("script", nargs="+", help="benchmark script and its arguments")
    args = parser.parse_args()
    sides = {"before": worktree(args.before), "after": worktree(args.after)}
    figures: dict[str, list[float]] = {side: [] for side in sides}
    for round_ in range(1, args.rounds + 1):
        for side, tree in sides.items():
            value = run(tree, args.script, args.figure)
            figures[side].append(value)
            print(f"round {round_} {side} ({tree.name}): {value:.1f} s", flush=True)
    print(f"\n{' '.join(args.script)}\n| side | commit | runs (s) | median s | spread |")
    print("|---|---|---|---:|---:|")
    for side, tree in sides.items():
        values = figures[side]
        spread = (max(values) - min(values)) / statistics.median(values)
        runs = " / ".join(f"{v:.1f}" for v in values)
        print(f"| {side} | {tree.name} | {runs} | {statistics.median(values):.1f} | {spread:.0%} |")
    ratio = statistics.median(figures["after"]) / statistics.median(figures["before"])
    print(f"\nafter/before: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
