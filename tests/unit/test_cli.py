"""Bad input to the CLI: a clear message naming the problem, a non-zero exit, no traceback."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardstream.entrypoints.cli import _reconcile, build_parser, main
from boardstream.spark.submit import JOBS


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["produce", "--members", "-5"], "argument --members: must be >= 0, got -5"),
        (["produce", "--boards", "many"], "argument --boards: expected a whole number, got 'many'"),
        (["produce", "--update-ratio", "x"], "argument --update-ratio: expected a number"),
        (["stack", "sideways"], "invalid choice: 'sideways'"),
        (["topics", "drop"], "invalid choice: 'drop'"),
    ],
)
def test_bad_flags_exit_2_with_the_reason(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_impossible_combination_is_a_user_error(capsys) -> None:
    code = main(["produce", "--members", "3", "--late-members", "2", "--deletes", "2"])
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("boardstream: error: --late-members plus --deletes cannot exceed")
    assert "Traceback" not in err


def test_bad_setting_names_the_env_var(monkeypatch, capsys) -> None:
    monkeypatch.setenv("BOARDSTREAM_PARTITIONS", "zero")
    assert main(["stack", "status"]) == 2
    assert "BOARDSTREAM_PARTITIONS" in capsys.readouterr().err


def boardstream(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it."""
    command = [str(Path(sys.executable).parent / "boardstream"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_job_run_help_lists_the_jobs_and_usage() -> None:
    result = boardstream("job", "run", "--help")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith("usage: boardstream job run [-h] JOB ...\n")
    assert result.stdout.endswith(
        "jobs:\n"
        + "".join(f"  {name}\n" for name in sorted(JOBS))
        + "\ne.g. boardstream job run board-detail-join -- --trigger processing-time\n"
    )
    assert len(JOBS) == 7


def test_an_unknown_job_is_one_line() -> None:
    result = boardstream("job", "run", "board-detail-joint")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "boardstream job run: error: argument JOB: invalid choice: 'board-detail-joint' (choose "
        "from 'board-detail-join', 'board-detail-repair', 'board-detail-sink', 'reconcile', "
        "'session-count', 'table-count', 'window-count') (see boardstream job run --help)\n"
    )


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """The parser and every subcommand's, however deep."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_no_option_can_overwrite_the_subcommand_handler() -> None:
    clashing = [
        (sub.prog, action.option_strings)
        for sub in _parsers(build_parser())
        for action in sub._actions
        if action.dest == "handler"
    ]
    assert clashing == []


def test_repair_run_keeps_both_the_handler_and_the_run_id() -> None:
    args = build_parser().parse_args(["repair", "--run", "7"])
    assert (args.handler, args.run) == (_reconcile, 7)


@pytest.mark.parametrize("prog", [sub.prog for sub in _parsers(build_parser())])
def test_help_shows_no_markup_backticks(prog: str) -> None:
    result = boardstream(*prog.split()[1:], "--help")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith(f"usage: {prog} ")
    assert "`" not in result.stdout
