"""A job's flags checked in the launching process, by the parser its driver uses.

Under spark-submit a Python driver parses its flags only once the JVM is up: a bad value was
refused after 79 s (`reconcile --stall-after 5x`, on a loaded machine), behind a usage and
three JVM warnings. The launcher parses them first, so bad input is one line and exit 2 in
about a second; the driver parses them again (a DAG's spark-submit has no launcher)."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable, Sequence

from boardstream.entrypoints import jobs, reconciliation
from boardstream.entrypoints.argtypes import flag_message
from boardstream.errors import InvalidOptionError

PARSERS: dict[str, Callable[[Sequence[str]], object]] = {
    "board-detail-join": jobs.join_config,
    "board-detail-sink": jobs.sink_config,
    "table-count": jobs.table_count_config,
    "session-count": jobs.session_config,
    "window-count": jobs.window_config,
    "reconcile": lambda argv: reconciliation.reconcile_parser().parse_args(argv),
    "board-detail-repair": lambda argv: reconciliation.repair_parser().parse_args(argv),
}


def refusal(job: str, argv: Sequence[str]) -> int | None:
    """None when ``job``'s driver would accept ``argv``; else the exit code to end with at
    once: 2 with the parser's error line on stderr (not its usage), or 0 when ``--help`` was
    asked for (the job's help, printed)."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            PARSERS[job](list(argv))
    except InvalidOptionError as error:  # a value the job's domain refuses, in its flags' names
        print(f"{job}: error: {flag_message(error)}", file=sys.stderr)
        return 2
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else 2
        lines = stderr.getvalue().strip().splitlines()
        if code:
            error = lines[-1] if lines else f"{job}: error: bad arguments"
            print(f"{error} (see boardstream job run {job} -- --help)", file=sys.stderr)
        return code
    return None
