"""A bounded CPU hog: busy-looping processes beside a job, as another tenant of a loaded machine
would be.

Each hog is a Python process spinning until its own deadline, so it ends by itself even if the
test that started it dies; it is stopped sooner by the pid recorded when it started (never by
name). Linux's scheduler shares the CPU first between sessions (autogroups, on by default), then
between the processes of a session: hogs in the test's session would leave a job started in a
session of its own (as the harness starts jobs, to kill them as a group) its full share. The hogs
therefore run in the job's session, started by this module as the job's launcher::

    python -m tests.faults.cpu_hog --processes 16 --seconds 240 -- COMMAND...

With ``processes`` hogs on this machine's 2 cores a newly started process of the job gets about
``2 / (processes + 1)`` of a core, as on a machine at load average ``processes``.
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

logger = logging.getLogger(__name__)

MAX_SECONDS = 300  # a hog never outlives this, whatever its caller asks
SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


@contextmanager
def cpu_hog(processes: int, seconds: float) -> Iterator[list[int]]:
    """``processes`` busy loops in this process's session, each ending after ``seconds`` (at
    most :data:`MAX_SECONDS`) or when the block exits, whichever is first; yields their pids."""
    seconds = min(seconds, MAX_SECONDS)
    hogs = [
        subprocess.Popen(
            [sys.executable, "-c", SPIN.format(seconds=seconds)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(processes)
    ]
    logger.info(
        "cpu hog: %d processes for at most %g s, pids %s", processes, seconds, [h.pid for h in hogs]
    )
    try:
        yield [hog.pid for hog in hogs]
    finally:
        for hog in hogs:
            if hog.poll() is None:
                hog.kill()
        for hog in hogs:
            hog.wait()


def beside(processes: int, seconds: float, command: Sequence[str]) -> list[str]:
    """``command`` launched with ``processes`` hogs beside it, in its session (see above)."""
    return [
        sys.executable,
        "-m",
        "tests.faults.cpu_hog",
        f"--processes={processes}",
        f"--seconds={seconds:g}",
        "--",
        *command,
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command beside the hogs; its exit code. The hogs stop when it ends."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    with cpu_hog(args.processes, args.seconds):
        return subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
