"""The ``boardstream`` command line: bad input is a clear one-line message naming the problem
and a non-zero exit without a traceback; each subcommand hands its handler exactly the job,
arguments and options its flags say (the seams: ``run_submit``, the domain's front door); help
reads without markup. Handlers that need a broker, Spark or Airflow are replaced at their seam,
so what is pinned is the command line's own decisions."""

from __future__ import annotations

import argparse
import io
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardstream.compaction.policy import Targets
from boardstream.compaction.tuning import Selection
from boardstream.entrypoints import cli
from boardstream.entrypoints.cli import _reconcile, build_parser, main
from boardstream.errors import BoardstreamError, InvalidOptionError
from boardstream.generator.manifest import Manifest
from boardstream.generator.plan import GeneratorOptions
from boardstream.joins.topics import Deployed
from boardstream.logs import VERBOSE_ENV, configure
from boardstream.settings import Settings
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


def test_a_jobs_bad_flag_is_one_line_from_the_installed_command() -> None:
    """As a user meets it: no JVM started (no Spark warning), one line, exit 2; how long it
    took is logged (it was 79 s when the driver parsed its flags under spark-submit)."""
    began = time.monotonic()
    result = boardstream("job", "run", "reconcile", "--", "--stall-after", "5x")
    logging.getLogger(__name__).info("refused in %.1f s", time.monotonic() - began)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "reconcile: error: argument --stall-after: expected a duration like 500ms, 30s, 10m, 2h "
        "or 7d, got '5x' (see boardstream job run reconcile -- --help)\n"
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
def test_help_shows_no_markup_backticks(prog: str, capsys) -> None:
    # In process (the console script itself is run by the tests above): a subprocess per
    # subcommand costs ~2 s each.
    with pytest.raises(SystemExit) as exit_info:
        main([*prog.split()[1:], "--help"])
    out, err = capsys.readouterr()
    assert (exit_info.value.code, err) == (0, "")
    assert out.startswith(f"usage: {prog} ")
    assert "`" not in out


# --- Each subcommand's handler, at its seam: what it is asked to run, and what it prints. ---


@pytest.fixture(autouse=True)
def own_var_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Settings() under a throwaway var dir, so nothing reads or writes the project's var/."""
    monkeypatch.setenv("BOARDSTREAM_VAR_DIR", str(tmp_path))
    return tmp_path


class Submitted(list):
    """The (job, job args) each spark-submit would run, and whether its driver was to be
    short-lived (C1 only: spark/jit.py), in ``short_lived``."""

    def __init__(self) -> None:
        super().__init__()
        self.short_lived: list[bool] = []


@pytest.fixture
def submitted(monkeypatch: pytest.MonkeyPatch) -> Submitted:
    """What each spark-submit would run; the job's exit code is 3."""
    calls = Submitted()

    def run_submit(
        _settings: Settings, job: str, job_args: list[str], short_lived: bool = False
    ) -> int:
        calls.append((job, job_args))
        calls.short_lived.append(short_lived)
        return 3

    monkeypatch.setattr(cli, "run_submit", run_submit)
    monkeypatch.setattr(cli, "require", lambda _settings, _job: None)  # services answer
    return calls


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["job", "run", "reconcile"], ("reconcile", [])),
        (["job", "run", "reconcile", "--", "--run-by", "x"], ("reconcile", ["--run-by", "x"])),
        # Left out, the "--" is not needed: the whole remainder goes to the job.
        (
            ["job", "run", "table-count", "--source-topic", "a", "--output-topic", "b"],
            ("table-count", ["--source-topic", "a", "--output-topic", "b"]),
        ),
        (
            ["reconcile"],
            (
                "reconcile",
                [
                    "--stall-after",
                    "20m",
                    "--unmatched-timeout",
                    "10m",
                    "--pipeline",
                    "board_detail",
                ],
            ),
        ),
        (
            ["reconcile", "--pipeline", "orders"],
            (
                "reconcile",
                ["--stall-after", "20m", "--unmatched-timeout", "10m", "--pipeline", "orders"],
            ),
        ),
        (
            ["reconcile", "--full", "--stall-after", "1h", "--join-checkpoint", "/cp/join"],
            (
                "reconcile",
                [
                    "--stall-after",
                    "1h",
                    "--unmatched-timeout",
                    "10m",
                    "--full",
                    "--pipeline",
                    "board_detail",
                    "--join-checkpoint",
                    "/cp/join",
                ],
            ),
        ),
        (
            ["repair", "--run", "7", "--join-mode", "as-of", "--sink-checkpoint", "/cp/sink"],
            (
                "board-detail-repair",
                [
                    *("--run", "7", "--join-mode", "as-of", "--pipeline", "board_detail"),
                    *("--sink-checkpoint", "/cp/sink"),
                ],
            ),
        ),
        (
            ["repair", "--run", "3", "--pipeline", "orders"],
            (
                "board-detail-repair",
                ["--run", "3", "--pipeline", "orders"],
            ),
        ),
    ],
)
def test_jobs_get_exactly_their_arguments_and_their_exit_code_is_the_commands(
    argv: list[str], expected: tuple[str, list[str]], submitted
) -> None:
    assert main(argv) == 3
    assert submitted == [expected]


@pytest.mark.parametrize("flag", ["--stall-after", "--unmatched-timeout"])
def test_reconcile_refuses_a_bad_duration_before_anything_starts(
    flag: str, submitted, capsys
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["reconcile", flag, "5x"])
    assert exited.value.code == 2
    assert submitted == []
    assert f"argument {flag}: expected a duration like 500ms" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            ["job", "run", "reconcile", "--", "--stall-after", "5x"],
            "reconcile: error: argument --stall-after: expected a duration like 500ms",
        ),
        (
            ["job", "run", "board-detail-join", "--", "--trigger", "bogus"],
            "board_detail_join: error: argument --trigger: invalid choice: 'bogus'",
        ),
        (
            ["job", "run", "board-detail-sink", "--", "--max-offsets-per-trigger", "0"],
            "board_detail_sink: error: argument --max-offsets-per-trigger: must be > 0, got 0",
        ),
        (
            ["job", "run", "table-count", "--", "--source-topic", "a"],
            "table_count: error: the following arguments are required: --output-topic",
        ),
        (
            ["job", "run", "board-detail-repair"],
            "repair: error: the following arguments are required: --run",
        ),
        (
            ["aggregate", "boards-per-city", "--", "--emit", "sometimes"],
            "window_count: error: argument --emit: invalid choice: 'sometimes'",
        ),
        (  # a value the join's domain refuses, named by its flag
            ["job", "run", "board-detail-join", "--", "--trigger", "real-time"],
            "board_detail_join: error: a real-time checkpoint --interval is at least 5 seconds, "
            "got '1 second'",
        ),
    ],
)
def test_a_jobs_bad_flags_are_refused_before_spark_submit(
    argv: list[str], error: str, submitted, capsys
) -> None:
    """Parsed here as the job's driver parses them: one line, exit 2, no spark-submit."""
    assert main(argv) == 2
    assert submitted == []
    err = capsys.readouterr().err
    assert err.startswith(error), err
    assert err.count("\n") == 1


def test_a_jobs_help_is_printed_without_spark_submit(submitted, capsys) -> None:
    assert main(["job", "run", "board-detail-sink", "--", "--help"]) == 0
    assert submitted == []
    assert capsys.readouterr().out.startswith("usage: board_detail_sink [-h]")


@pytest.mark.parametrize(
    ("argv", "short_lived"),
    [
        (["reconcile"], True),
        (["reconcile", "--full"], False),
        (["repair", "--run", "7"], False),
        (["job", "run", "reconcile"], False),
    ],
)
def test_only_an_incremental_reconcile_has_a_short_lived_driver(
    argv: list[str], short_lived: bool, submitted
) -> None:
    assert main(argv) == 3
    assert submitted.short_lived == [short_lived]


def test_aggregate_runs_the_presets_job_with_its_arguments_then_the_users(submitted) -> None:
    assert main(["aggregate", "boards-per-city", "--", "--trigger", "processing-time"]) == 3
    assert submitted == [
        (
            "window-count",
            [
                "--source-topic",
                "board-detail",
                "--output-topic",
                "board-detail-boards-per-city",
                "--value-field",
                "city",
                "--size",
                "1m",
                "--grace",
                "10s",
                "--trigger",
                "processing-time",
            ],
        )
    ]


def test_job_list_prints_the_jobs_sorted(capsys, submitted) -> None:
    assert main(["job", "list"]) == 0
    assert capsys.readouterr().out == "".join(f"{name}\n" for name in sorted(JOBS))
    assert submitted == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["topics", "describe", "--partitions", "3"], "--partitions and --config need"),
        (["topics", "create", "--config", "a=1"], "--partitions and --config need"),
        (
            ["topics", "create", "--topic", "t", "--config", "a=1", "--config", "a=2"],
            "--config a given twice",
        ),
        (["compaction", "rollback"], "compaction rollback needs --change ID"),
        (["compaction", "verify"], "compaction verify needs --change ID"),
        (["state", "show", "--checkpoint", "/nonexistent/cp"], "no checkpoint at /nonexistent/cp"),
    ],
)
def test_refusals_before_any_service_is_asked(argv, message, monkeypatch, capsys) -> None:
    # compaction's handler makes its admin client first (a client connects lazily).
    monkeypatch.setattr("boardstream.kafka.clients.admin_client", lambda _settings: object())
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"boardstream: error: {message}")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "execute"),
    [
        (["compaction", "apply"], False),  # a dry run unless told
        (["compaction", "apply", "--execute"], True),
        (["compaction", "recommend", "--execute"], False),  # only apply applies
    ],
)
def test_compaction_targets_selection_and_dry_run(argv, execute, monkeypatch, capsys) -> None:
    from boardstream import compaction

    calls = []
    asked = []
    monkeypatch.setattr(
        cli,
        "require",
        lambda _s, job, database, checkpoints: asked.append((job, database, checkpoints)),
    )
    monkeypatch.setattr("boardstream.kafka.clients.admin_client", lambda _settings: "admin")
    # Tuned nothing: the report is empty.
    monkeypatch.setattr(compaction, "tune", lambda *args: calls.append(args) or [])
    flags = ["--topic", "m*", "--exclude", "m-dlq", "--restore-budget", "10m", "--update-rate", "5"]
    assert main([*argv, *flags]) == 0
    ((admin, _settings, selection, targets, executed, run_by),) = calls
    # The database only for the log it writes; no checkpoint is touched.
    assert asked == [("compaction", execute, False)]
    assert admin == "admin"
    assert selection == Selection(("m*",), ("m-dlq",), ("member", "board"))
    assert targets == Targets(
        max_replay_waste=0.1,
        update_rate=5.0,
        restore_rate=50_000.0,
        restore_budget_s=600.0,
        max_consumer_downtime_ms=86_400_000,
        reconciliation_interval_ms=900_000,
    )
    assert executed is execute
    assert run_by.startswith("cli:") and len(run_by) > len("cli:")
    assert capsys.readouterr().out == "\n"


def test_produce_prints_the_counts_and_where_the_manifest_went(
    monkeypatch, capsys, tmp_path: Path
) -> None:
    from boardstream.generator import producer

    produced, pipelines = [], []

    def produce(
        _settings: Settings, options: GeneratorOptions, path: Path, deployed: Deployed
    ) -> Manifest:
        produced.append((options, path))
        pipelines.append(deployed.pipeline.name)
        manifest = Manifest.start(options, {})
        manifest.keys.update({"members": ["1", "2"], "boards": ["b1"] * 1234})
        return manifest

    monkeypatch.setattr(producer, "produce", produce)
    assert main(["produce", "--production-scale", "--seed", "7", "--orphans", "2"]) == 0
    ((options, path),) = produced
    assert options == GeneratorOptions(members=442_128, boards=447_017, seed=7, orphans=2)
    assert path.parent == tmp_path / "manifests" and path.name.endswith("-seed7.json")
    assert capsys.readouterr().out == f"boards: 1,234\nmembers: 2\nmanifest: {path}\n"
    main(["produce", "--manifest", str(tmp_path / "m.json"), "--pipeline", "orders"])
    assert produced[-1] == (GeneratorOptions(), tmp_path / "m.json")
    assert pipelines == ["board_detail", "orders"]


@pytest.mark.parametrize(
    ("flags", "generator"),
    [
        ([], {}),  # left out: the demo_data DAG's own defaults
        (["--members", "5", "--seed", "3"], {"members": 5, "seed": 3}),
        (["--production-scale", "--malformed", "1"], {"production_scale": True, "malformed": 1}),
    ],
)
def test_demo_passes_only_the_generator_flags_given(flags, generator, monkeypatch) -> None:
    from boardstream.entrypoints import demo

    given = []
    monkeypatch.setattr(demo, "run_demo", lambda _settings, conf: given.append(conf) or 4)
    assert main(["demo", *flags]) == 4
    assert given == [generator]


def test_setup_fetches_each_set_then_builds_the_operator(monkeypatch, capsys, tmp_path) -> None:
    from boardstream.stack import jars

    fetched = []

    def fetch(jar_set: jars.JarSet, jars_dir: Path) -> list[Path]:
        fetched.append(jar_set.name)
        return [jars_dir / f"{jar_set.name}-{i}.jar" for i in range(2)]

    monkeypatch.setattr(jars, "fetch", fetch)
    monkeypatch.setattr(jars, "build", lambda _set, jars_dir: [jars_dir / "op.jar"])
    assert main(["setup"]) == 0
    assert fetched == ["kafka", "spark-kafka", "hdfs"]
    assert capsys.readouterr().out == (
        f"kafka: 2 jars in {tmp_path / 'jars' / 'kafka'}\n"
        f"spark-kafka: 2 jars in {tmp_path / 'jars' / 'spark-kafka'}\n"
        f"hdfs: 2 jars in {tmp_path / 'jars' / 'hdfs'}\n"
        "boardstream-jvm: built op.jar\n"
    )
    assert main(["setup", "--no-fetch"]) == 0
    assert fetched == ["kafka", "spark-kafka", "hdfs"]  # no more fetches
    assert capsys.readouterr().out == "boardstream-jvm: built op.jar\n"


def test_stack_passes_the_services_asked_for_and_prints_a_line_each(monkeypatch, capsys) -> None:
    from boardstream.stack import local

    asked = []

    class Stack:
        def __init__(self, _settings: Settings) -> None:
            pass

        def up(
            self,
            postgres: bool,
            airflow: bool,
            spark_cluster: bool,
            brokers: int | None,
            hdfs: bool,
            only: tuple[str, ...] | list[str],
        ) -> list[str]:
            asked.append(("up", postgres, airflow, spark_cluster, brokers, hdfs, tuple(only)))
            return ["kafka started", "postgres started"]

        def down(self) -> list[str]:
            asked.append(("down",))
            return ["nothing was running"]

        def status(self) -> list[local.ServiceStatus]:
            return [local.ServiceStatus("kafka", None, "localhost:9092")]

        def database_line(self) -> str:
            return "the platform's database: x"

    monkeypatch.setattr(local, "LocalStack", Stack)
    assert main(["stack", "up", "--postgres"]) == 0
    assert main(["stack", "up", "--airflow", "--spark-cluster"]) == 0
    assert main(["stack", "up", "--brokers", "3"]) == 0
    assert main(["stack", "up", "--hdfs"]) == 0
    assert main(["stack", "up", "--only", "spark-worker", "--only", "postgres"]) == 0
    assert main(["stack", "down"]) == 0
    assert main(["stack", "status"]) == 0
    assert asked == [
        ("up", True, False, False, None, False, ()),
        ("up", False, True, True, None, False, ()),
        ("up", False, False, False, 3, False, ()),
        ("up", False, False, False, None, True, ()),
        ("up", False, False, False, None, False, ("spark-worker", "postgres")),
        ("down",),
    ]
    database = "the platform's database: x\n"  # after up and status, not down
    assert capsys.readouterr().out == (
        f"kafka started\npostgres started\n{database}" * 5 + "nothing was running\n"
        f"kafka        stopped                localhost:9092\n{database}"
    )


def _failing_with(error: BaseException):
    def handler(_args, _settings) -> int:
        raise error

    return handler


@pytest.mark.parametrize(
    ("error", "code", "err"),
    [
        (BoardstreamError("no broker"), 1, "boardstream: error: no broker\n"),
        (
            InvalidOptionError("update ratio must be between 0 and 100", "update ratio"),
            1,
            "boardstream: error: --update-ratio must be between 0 and 100\n",
        ),
        (KeyboardInterrupt(), 130, "boardstream: interrupted\n"),
    ],
)
def test_user_errors_are_one_line_and_an_exit_code(error, code, err, monkeypatch, capsys) -> None:
    monkeypatch.setitem(cli._COMMANDS, "setup", cli._Command(_failing_with(error), "setup"))
    assert main(["setup"]) == code
    assert capsys.readouterr() == ("", err)


def test_output_piped_into_head_is_not_an_error(monkeypatch) -> None:
    monkeypatch.setitem(
        cli._COMMANDS, "setup", cli._Command(_failing_with(BrokenPipeError()), "setup")
    )
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    assert main(["setup"]) == 0
    assert stderr.closed  # nothing more is written to the closed pipe


def test_verbose_is_passed_on_to_the_jobs_it_starts(monkeypatch, submitted) -> None:
    # Set, then deleted: monkeypatch then restores the variable's absence afterwards, which a
    # delenv of an absent variable alone does not (main's "1" leaked into the later tests).
    monkeypatch.setenv(VERBOSE_ENV, "")
    monkeypatch.delenv(VERBOSE_ENV)
    try:
        assert main(["job", "run", "reconcile"]) == 3
        assert VERBOSE_ENV not in os.environ
        assert main(["--verbose", "job", "run", "reconcile"]) == 3
        assert os.environ[VERBOSE_ENV] == "1"
    finally:
        configure(False)  # the libraries' log levels back to quiet for the tests after


@pytest.mark.parametrize(
    ("env", "code", "message"),
    [
        (
            {"BOARDSTREAM_KAFKA_NODE": "4"},
            1,
            "boardstream: error: BOARDSTREAM_KAFKA_NODE=4: the cluster's nodes are 1 to 3, at "
            "BOARDSTREAM_BOOTSTRAP_SERVERS=127.0.0.2:19092,127.0.0.3:19092,127.0.0.4:19092 in "
            "that order",
        ),
        (
            {"BOARDSTREAM_KAFKA_CLUSTER_ID": "not-an-id"},
            2,
            "boardstream: error: bad setting: BOARDSTREAM_KAFKA_CLUSTER_ID: Value error, "
            "expected a Kafka cluster id (22 characters of URL-safe base64, not starting with "
            "'-', as `kafka-storage random-uuid` prints), got 'not-an-id'",
        ),
    ],
)
def test_a_spread_cluster_the_settings_cannot_describe_is_one_line_before_anything_starts(
    env, code, message, tmp_path, monkeypatch, capsys
) -> None:
    spread = {
        "BOARDSTREAM_VAR_DIR": str(tmp_path),
        "BOARDSTREAM_BOOTSTRAP_SERVERS": "127.0.0.2:19092,127.0.0.3:19092,127.0.0.4:19092",
        "BOARDSTREAM_KAFKA_NODE": "2",
        "BOARDSTREAM_KAFKA_CLUSTER_ID": "MkU3OEVBNTcwNTJENDM2Qg",
    }
    for name, value in {**spread, **env}.items():
        monkeypatch.setenv(name, value)
    assert main(["stack", "up", "--only", "kafka"]) == code
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []
