"""Every command line of the ```bash blocks of the README and of every page of docs/ (the
commands are in docs/COMMANDS.md, the docker-compose ones in docs/DOCKER_COMPOSE.md) still exists
as documented: a `boardstream` command and its flags parse with the real parser (the job's
arguments after `--`, with that job's own parser), the `bin/` scripts and the files `cp` and
`docker compose` name are there. And each command is mapped to the test that runs it for real,
or to None where none does, with the reason in NOT_RUN_HERE, so a newly documented command has to
say which."""

from __future__ import annotations

import argparse
import os
import re
import shlex
from collections.abc import Callable

import pytest
import yaml

from boardstream.aggregations.presets import PRESETS
from boardstream.entrypoints.cli import build_parser
from boardstream.entrypoints.jobs import (
    join_parser,
    session_parser,
    sink_parser,
    table_count_parser,
    window_parser,
)
from boardstream.settings import PROJECT_ROOT, Settings

PREFIXES = (".venv/bin/boardstream ", "bin/", "docker compose ", "cp ")
# The jobs' own parsers, by the name `job run` takes (boardstream.spark.submit.JOBS).
JOB_PARSERS: dict[str, Callable[[], argparse.ArgumentParser]] = {
    "board-detail-join": join_parser,
    "board-detail-sink": sink_parser,
    "table-count": table_count_parser,
    "session-count": session_parser,
    "window-count": window_parser,
}
BS = ".venv/bin/boardstream"
# Each documented command, as written there, and the test that runs that command (the CLI, not
# only the function behind it) for real; None: no test does.
COMPACTION_CLI = (
    "tests/integration/test_compaction_cli.py::test_measure_recommend_apply_verify_rollback"
)
STATE_SHOW = (
    "tests/integration/test_state_show.py::test_shows_the_joins_state_and_finds_a_waiting_board"
)
EDGE_HOSTS = (
    "tests/integration/test_airflow_edge_hosts.py::"
    "test_a_task_runs_on_a_driver_host_and_on_the_other_once_that_one_dies"
)
COMPOSE_RUN = (
    "tests/integration/test_compose_run.py::test_the_compose_stack_runs_the_demo_and_leaves_nothing"
)
DECLARED_BY_NAME = (
    "tests/integration/test_declared_join.py::test_the_jobs_run_a_declared_pipeline_by_name"
)
RUN_BY: dict[str, str | None] = {
    "bin/demo": "tests/dags/test_demo.py::test_demo_ends_passed_with_a_balance_that_adds_up",
    "bin/test": None,  # NOT_RUN_HERE
    f"{BS} job list": "tests/integration/test_job_cli.py::test_job_list_prints_the_jobs",
    f"{BS} job run board-detail-join [-- --join-mode as-of --unmatched-timeout 10m]": (
        # without the job's arguments
        "tests/integration/test_kafka_auth.py::test_right_credentials_run_the_pipeline"
    ),
    f"{BS} job run board-detail-sink [-- --trigger processing-time]": (
        "tests/faults/test_process_kills.py::test_kill_9_join_and_sink_mid_backlog"
    ),
    f"{BS} job run board-detail-join -- --pipeline orders": DECLARED_BY_NAME,
    f"{BS} job run board-detail-sink -- --pipeline orders": DECLARED_BY_NAME,
    f"{BS} reconcile --pipeline orders": DECLARED_BY_NAME,
    f"{BS} reconcile": (
        "tests/integration/test_reconcile.py::test_reconcile_command_exit_code_is_the_verdict"
    ),
    f"{BS} reconcile --full": (
        "tests/integration/test_reconcile.py::test_reconcile_command_exit_code_is_the_verdict"
    ),
    f"{BS} reconcile --stall-after 30m --unmatched-timeout 10m": (
        "tests/integration/test_reconcile.py::test_reconcile_command_exit_code_is_the_verdict"
    ),
    f"{BS} repair --run 3 --pipeline orders": DECLARED_BY_NAME,
    f"{BS} repair --run 7": (
        # an unknown run only: refused before Spark starts
        "tests/integration/test_repair_cli.py::test_repair_of_an_unknown_run_is_one_line"
    ),
    f"{BS} compaction measure [--topic 'member*'] [--exclude PATTERN]": COMPACTION_CLI,
    f"{BS} compaction recommend --max-replay-waste 0.1 --restore-budget 5m": COMPACTION_CLI,
    f"{BS} pipelines check boardstream/pipelines/declarations/orders.yml": (
        "tests/unit/entrypoints/test_cli_pipelines.py::test_check_of_a_shipped_declaration_prints_ok"
    ),
    f"{BS} pipelines list": (
        "tests/unit/entrypoints/test_cli_pipelines.py::test_list_names_the_shipped_pipelines"
    ),
    f"{BS} pipelines show orders": (
        "tests/unit/entrypoints/test_cli_pipelines.py::test_show_prints_the_resolved_declaration"
    ),
    f"{BS} compaction apply": (
        "tests/integration/test_compaction.py::test_cli_refuses_bad_targets_and_missing_change"
    ),
    f"{BS} compaction apply --execute": COMPACTION_CLI,
    f"{BS} compaction verify --change 3": COMPACTION_CLI,  # the change apply --execute logged
    f"{BS} compaction rollback --change 3": COMPACTION_CLI,
    f"{BS} aggregate boards-per-member": (
        "tests/integration/test_aggregate_cli.py::"
        "test_boards_per_member_counts_each_members_boards_now"
    ),
    f"{BS} aggregate member-sessions": (
        "tests/integration/test_aggregate_cli.py::"
        "test_member_sessions_counts_boards_per_30_minute_session"
    ),
    f"{BS} aggregate boards-per-city": (
        "tests/integration/test_aggregate_cli.py::"
        "test_boards_per_city_counts_joined_boards_per_minute"
    ),
    f"{BS} job run window-count -- --source-topic T --output-topic O --size 1m --grace 30s "
    "--retention 1h [--value-field F] [--time-field F] [--emit final|updates]": (
        "tests/integration/test_job_cli.py::test_window_count_emit_final_and_updates"
    ),
    f"{BS} state show --checkpoint var/checkpoints/<job>-<output topic> [--key K]": STATE_SHOW,
    f"{BS} state show --pipeline NAME [--key K]": DECLARED_BY_NAME,
    # docs/AGGREGATIONS.md's: on the join's checkpoint (an aggregation's state is read through
    # state_report, the function behind the command, in tests/integration/test_event_time_counts.py)
    f"{BS} state show --checkpoint var/checkpoints/window-count-board-detail-boards-per-city": (
        STATE_SHOW
    ),
    f"{BS} state show --checkpoint var/checkpoints/board-detail-join --key 17": STATE_SHOW,
    f"{BS} state show --checkpoint ... --var clock": None,  # NOT_RUN_HERE
    f"{BS} stack up [--postgres] [--airflow] [--spark-cluster]": (
        # --postgres, not --airflow; the cluster's services as `up` starts them in
        # tests/integration/test_spark_cluster.py (beside the suite's broker, not a second one)
        "tests/integration/test_stack.py::test_up_twice_starts_once_and_down_stops_only_ours"
    ),
    f"{BS} stack up --brokers 3": (
        "tests/integration/test_kafka_cluster.py::"
        "test_three_brokers_replicate_every_topic_and_stop_together"
    ),
    f"{BS} stack up --only kafka": (
        "tests/integration/test_kafka_hosts.py::"
        "test_three_hosts_each_start_their_node_and_the_cluster_survives_losing_one"
    ),
    f"{BS} stack up --hdfs": (
        "tests/integration/test_hdfs.py::test_up_twice_starts_hdfs_once_and_down_stops_both"
    ),
    f"{BS} stack up --only postgres --only airflow": EDGE_HOSTS,
    f"{BS} stack up --only edge-worker": EDGE_HOSTS,
    f"{BS} stack status": (
        "tests/integration/test_stack.py::test_up_twice_starts_once_and_down_stops_only_ours"
    ),
    f"{BS} stack down": (
        "tests/integration/test_stack.py::test_up_twice_starts_once_and_down_stops_only_ours"
    ),
    f"{BS} topics create": (
        "tests/integration/test_topics_cli.py::test_without_topic_creates_the_platform_topics"
    ),
    f"{BS} topics create --topic orders --partitions 6 --config cleanup.policy=compact "
    "--config retention.ms=86400000": (
        "tests/integration/test_topics_cli.py::test_creates_any_topic_with_partitions_and_configs"
    ),
    f"{BS} topics create --pipeline orders": (
        "tests/integration/test_topics_cli.py::"
        "test_a_declared_pipelines_topics_as_its_declaration_names_them"
    ),
    f"{BS} topics describe [--topic board] [--all-configs]": (
        "tests/integration/test_topics_cli.py::"
        "test_describe_prints_partitions_offsets_and_set_configs"
    ),
    f"{BS} produce --members 5000 --boards 8000 --late-members 40 --orphans 25 --deletes 50 "
    "--update-ratio 0.2 --malformed 10 --seed 42": (
        "tests/integration/test_produce_cli.py::test_the_example_load_prints_what_the_topics_hold"
    ),
    f"{BS} produce --members 5000 --boards 8000 --late-members 40 --orphans 25 --deletes 50 "
    "--update-ratio 0.2 --malformed 10 --seed 42 --pipeline orders": (
        "tests/integration/test_produce_cli.py::"
        "test_a_declared_pipelines_data_set_onto_its_own_topics"
    ),
    f"{BS} produce --production-scale": (
        "tests/integration/test_produce_cli.py::test_production_scale_counts_match_the_topics"
    ),
    "cp .env.example .env": (
        "tests/integration/test_env_example_cli.py::test_env_example_is_what_settings_read"
    ),
    # bin/compose-run runs `docker compose up -d --wait` and scales spark-worker to 2 (long).
    "docker compose up -d": COMPOSE_RUN,
    "docker compose up -d --scale spark-worker=3": None,  # NOT_RUN_HERE
    "bin/compose-run --port-base 18000": COMPOSE_RUN,
    "bin/setup --docker": None,  # NOT_RUN_HERE
}
# Commands no test here runs, each with the reason and what stands in for it. Only these may be
# None in RUN_BY.
NOT_RUN_HERE: dict[str, str] = {
    "bin/test": "the test suite itself: .ci/run runs it (bin/test -p no:cacheprovider) in CI",
    "docker compose up -d --scale spark-worker=3": (
        "three workers' limits (3 GiB each) beside the stack pass a test machine's share; "
        "bin/compose-run (the long test) scales spark-worker to 2 and sees the second register, "
        "and tests/unit/test_compose_loader.py::test_spark_worker_can_be_scaled checks that "
        "nothing of the service stops more copies (container name, fixed host port)"
    ),
    "bin/setup --docker": (
        "installs Debian packages as root, which CI's default bin/setup leaves out; where "
        "bin/compose-run ran they were installed by apt-get, Go was there already"
    ),
    f"{BS} state show --checkpoint ... --var clock": (
        "the CLI runs --var only with a name the state does not have, refused "
        "(tests/integration/test_state_show.py); the clock variable of a windowed job is read "
        "through state_report, the function behind the command, in tests/integration/"
        "test_event_time_counts.py::test_windows_grace_lateness_retention_and_restart"
    ),
}
# Where commands are documented: the README and every page of docs/.
PAGES = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]


def documented_commands() -> list[str]:
    """The commands of the bash blocks of the README and of the docs/ pages: continuation lines
    joined, comments dropped."""
    commands = []
    for page in PAGES:
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                command = " ".join(re.sub(r"\s+#\s.*$", "", line).split())
                if command.startswith(PREFIXES):
                    commands.append(command)
    return commands


def variants(command: str) -> list[list[str]]:
    """The argv lists a documented command stands for: without its optional ``[...]`` parts,
    and with all of them, once per alternative of ``a|b``; a ``<placeholder>`` is one word."""
    text = re.sub(r"<[^>]*>", "X", command)
    bare = shlex.split(re.sub(r"\s*\[[^\]]*\]", "", text))
    full = [word.split("|") for word in shlex.split(text.replace("[", "").replace("]", ""))]
    choices = max(len(alternatives) for alternatives in full)
    return [bare] + [[alts[min(i, len(alts) - 1)] for alts in full] for i in range(choices)]


def exact(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The parser, and its subcommands', taking whole flag names only: a documented flag that
    is the abbreviation of a renamed one must not pass."""
    parser.allow_abbrev = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                exact(subparser)
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    try:
        return exact(parser).parse_args(argv)
    except SystemExit as exit:  # argparse's error, on stderr
        pytest.fail(f"{parser.prog} {shlex.join(argv)}: does not parse (exit {exit.code})")


def check_boardstream(argv: list[str]) -> None:
    """The CLI's parser, then the job's own parser for what `job run` / `aggregate` pass on."""
    args = parse(build_parser(), argv)
    if argv[0] == "job" and args.action == "run":
        job, passed = args.name, []
    elif argv[0] == "aggregate":
        job, passed = PRESETS[args.name].job, PRESETS[args.name].job_args(Settings())
    else:
        return
    extra = args.job_args[1:] if args.job_args[:1] == ["--"] else args.job_args
    parse(JOB_PARSERS[job](), [*passed, *extra])


def check(command: str) -> None:
    for argv in variants(command):
        if argv[0] == ".venv/bin/boardstream":
            check_boardstream(argv[1:])
        elif argv[0].startswith("bin/"):
            assert os.access(PROJECT_ROOT / argv[0], os.X_OK), f"{argv[0]} is not executable"
        elif argv[0] == "cp":
            assert (PROJECT_ROOT / argv[1]).is_file(), f"{command}: no {argv[1]}"
        else:
            compose = yaml.safe_load((PROJECT_ROOT / "docker-compose.yml").read_text())
            scaled = {argv[i + 1].split("=")[0] for i, word in enumerate(argv) if word == "--scale"}
            assert scaled <= set(compose["services"]), f"{command}: no service {scaled}"


@pytest.mark.parametrize("command", documented_commands())
def test_every_documented_command_parses(command: str) -> None:
    check(command)


def test_every_documented_command_names_the_test_that_runs_it() -> None:
    assert sorted(set(documented_commands())) == sorted(RUN_BY)
    unrun = {command for command, test in RUN_BY.items() if test is None}
    assert unrun == set(NOT_RUN_HERE), "a command no test runs needs a reason"
    for command, test in RUN_BY.items():
        if test is not None:
            path, name = test.split("::")
            source = (PROJECT_ROOT / path).read_text()
            assert f"def {name}(" in source, f"{command}: no {test}"


@pytest.mark.parametrize(
    "command",
    [
        f"{BS} reconcile --stall-after 30m --unmatched-timout 10m",
        f"{BS} job run board-detail-sink [-- --trigger sometimes]",
        f"{BS} job run window-count -- --source-topic T --output-topic O --size 1m "
        "[--emit final|all]",
        f"{BS} compaction prune",
        f"{BS} reconcile --stall 30m",
    ],
)
def test_a_flag_or_value_that_no_longer_exists_fails(command: str) -> None:
    with pytest.raises(pytest.fail.Exception, match="does not parse"):
        check(command)
