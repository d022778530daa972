"""The ``boardstream`` command: setup, the local stack, topics and the data generator.

User errors (bad flags, bad settings, no broker) print one line naming the problem and exit
non-zero, without a traceback; ``--verbose`` adds the Kafka client's, Spark's and Great
Expectations' own log lines.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, NamedTuple, NoReturn
from urllib.parse import urlsplit

from pydantic import ValidationError

from boardstream.aggregations.presets import PRESETS
from boardstream.compaction.policy import Targets
from boardstream.entrypoints.argtypes import (
    config_entry,
    count,
    duration_ms,
    duration_text,
    flag_message,
    fraction,
    options_from,
    positive,
    positive_number,
    ratio,
)
from boardstream.entrypoints.pipeline_option import add_pipeline_argument, chosen
from boardstream.errors import (
    BoardstreamError,
    InvalidOptionError,
    PipelineDeclarationError,
    ServiceUnreachableError,
)
from boardstream.generator.plan import GeneratorOptions
from boardstream.locations import checkpoint_uri, shown
from boardstream.logs import VERBOSE_ENV, configure
from boardstream.pipelines import Join, Reconcile, query_name
from boardstream.preflight import require
from boardstream.settings import CLUSTER_SIZES, Settings
from boardstream.spark.submit import JOBS, application, build_class_archive, run_submit


def _setup(args: argparse.Namespace, settings: Settings) -> int:
    from boardstream.stack import jars

    for jar_set in [] if args.no_fetch else jars.ALL:
        found = jars.fetch(jar_set, settings.jars_dir)
        print(f"{jar_set.name}: {len(found)} jars in {jar_set.target(settings.jars_dir)}")
    built = jars.build(jars.JOIN_OPERATOR, settings.jars_dir)
    print(f"{jars.JOIN_OPERATOR.name}: built {', '.join(jar.name for jar in built)}")
    try:
        archive = build_class_archive(settings)
    except BoardstreamError as error:  # jobs still run, each driver starting slower
        print(f"driver class archive: not built: {error}", file=sys.stderr)
    else:
        print(f"driver class archive: {archive} ({archive.stat().st_size >> 20} MB)")
    return 0


def _stack(args: argparse.Namespace, settings: Settings) -> int:
    from boardstream.stack.local import LocalStack

    stack = LocalStack(settings)
    if args.action == "up":
        lines = stack.up(
            postgres=args.postgres,
            airflow=args.airflow,
            spark_cluster=args.spark_cluster,
            brokers=args.brokers,
            hdfs=args.hdfs,
            only=args.only or (),
        )
    elif args.action == "down":
        lines = stack.down()
    else:
        lines = [status.line() for status in stack.status()]
    if args.action != "down":
        lines.append(stack.database_line())
    print("\n".join(lines))
    return 0


def _topics(args: argparse.Namespace, settings: Settings) -> int:
    from boardstream.kafka.clients import admin_client
    from boardstream.kafka.retention import read_retention, warn_expiry
    from boardstream.kafka.topics import (
        TopicSpec,
        create_topics,
        describe_topics,
        platform_topics,
    )

    if (args.partitions or args.config) and not (args.action == "create" and args.topic):
        raise BoardstreamError("--partitions and --config need `topics create --topic NAME`")
    config: dict[str, str] = {}
    for key, value in args.config or []:
        if key in config:
            raise BoardstreamError(f"--config {key} given twice")
        config[key] = value
    if args.pipeline is not None and args.topic:
        raise BoardstreamError("--pipeline and --topic: give one or the other")
    admin = admin_client(settings)
    pipeline = None if args.pipeline is None else chosen(args.pipeline, settings).topics
    if args.action == "create":
        if args.topic:
            specs = [
                TopicSpec.replicated(
                    settings, name, args.partitions or settings.topic_partitions(name), config
                )
                for name in args.topic
            ]
        else:
            source = read_retention(admin, settings, pipeline).source
            specs = platform_topics(settings, source, pipeline)
        for result in create_topics(admin, settings, specs):
            print(result.line())
        warn_expiry(admin, settings, [spec.name for spec in specs], pipeline)
        return 0
    names = args.topic or [spec.name for spec in platform_topics(settings, topics=pipeline)]
    descriptions = describe_topics(admin, settings, names)
    risks = warn_expiry(admin, settings, names, pipeline)
    for description in descriptions:
        end = sum(description.end_offsets.values())
        print(f"{description.name}: {description.partitions} partitions, end offsets {end:,}")
        for partition, offset in sorted(description.end_offsets.items()):
            start = description.start_offsets[partition]
            print(f"  partition {partition}: offsets {start:,}..{offset:,}")
        for name, (value, is_default) in sorted(description.configs.items()):
            if args.all_configs or not is_default:
                print(f"  {name}={value}{' (default)' if is_default else ''}")
        for risk in risks:
            if risk.output == description.name:
                print(f"  EXPIRY RISK: {risk}")
    return 0


def _produce(args: argparse.Namespace, settings: Settings) -> int:
    from boardstream.generator.manifest import default_path
    from boardstream.generator.plan import production_scale
    from boardstream.generator.producer import produce

    counts = production_scale() if args.production_scale else {}
    options = options_from(GeneratorOptions, args, **counts)
    manifest_path = args.manifest or default_path(settings.var_dir, args.seed)
    deployed = chosen(args.pipeline, settings)
    manifest = produce(settings, options, manifest_path, deployed=deployed)
    for kind, number in manifest.counts.items():
        print(f"{kind}: {number:,}")
    print(f"manifest: {manifest_path}")
    return 0


def _demo(args: argparse.Namespace, settings: Settings) -> int:
    from boardstream.entrypoints.demo import run_demo

    generator = {name: value for name, value in vars(args).items() if name in _GENERATOR_FLAGS}
    return run_demo(settings, generator)


def _aggregate(args: argparse.Namespace, settings: Settings) -> int:
    from boardstream.aggregations.presets import preset

    chosen = preset(args.name)
    return _submit(settings, chosen.job, [*chosen.job_args(settings), *_job_args(args)])


def _job(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "list":
        print("\n".join(sorted(JOBS)))
        return 0
    return _submit(settings, args.name, _job_args(args))


def _submit(settings: Settings, job: str, job_args: list[str], short_lived: bool = False) -> int:
    """spark-submit ``job`` once its flags (parsed here as its driver will parse them) and its
    services are fine: bad input or a service down is refused before a JVM starts."""
    from boardstream.entrypoints.job_flags import refusal

    application(job)  # an unknown job is named before anything else
    if (code := refusal(job, job_args)) is not None:
        return code
    require(settings, job)
    return run_submit(settings, job, job_args, short_lived=short_lived)


def _job_args(args: argparse.Namespace) -> list[str]:
    """What follows ``--`` (or the whole remainder, when it was left out) goes to the job."""
    return args.job_args[1:] if args.job_args[:1] == ["--"] else args.job_args


def _compaction(args: argparse.Namespace, settings: Settings) -> int:
    import getpass

    from boardstream import compaction
    from boardstream.compaction import tuning
    from boardstream.compaction.measure import measure_topic
    from boardstream.kafka.clients import admin_client

    if args.action in ("rollback", "verify") and args.change is None:
        raise BoardstreamError(f"compaction {args.action} needs --change ID")
    # The tuning log is in the database: applying, rolling back and verifying write it.
    writes_log = args.action in ("rollback", "verify") or (args.action == "apply" and args.execute)
    require(settings, "compaction", database=writes_log, checkpoints=False)
    admin = admin_client(settings)
    run_by = f"cli:{getpass.getuser()}"
    if args.action in ("rollback", "verify"):
        if args.action == "rollback":
            change_id = compaction.rollback(admin, settings, args.change, run_by)
            print(f"change {args.change} rolled back (logged as change {change_id})")
        else:
            (after,) = compaction.verify(admin, settings, args.change).values()
            print(tuning.measurement_line(after))
        return 0
    selection = compaction.selection(
        settings, args.topic or (), args.exclude or (), args.reconciled or ()
    )
    targets = Targets(
        max_replay_waste=args.max_replay_waste,
        update_rate=args.update_rate,
        restore_rate=args.restore_rate,
        restore_budget_s=args.restore_budget / 1000,
        max_consumer_downtime_ms=args.max_consumer_downtime,
        reconciliation_interval_ms=args.reconciliation_interval,
    )
    if args.action == "measure":
        for topic in tuning.select(admin, settings, selection):
            print(tuning.measurement_line(measure_topic(admin, settings, topic)))
        return 0
    execute = args.action == "apply" and args.execute
    tunings = compaction.tune(admin, settings, selection, targets, execute, run_by)
    print("\n".join(tuning.report(tunings, execute)))
    return 0


def _state(args: argparse.Namespace, settings: Settings) -> int:
    from boardstream.spark.checkpoint_files import CheckpointFiles
    from boardstream.spark.session import spark_session
    from boardstream.spark.state import require_checkpoint, state_report

    name = chosen(args.pipeline, settings).pipeline.name  # a name not declared: refused
    location = (
        settings.checkpoint(query_name(name, "join"))
        if args.checkpoint is None
        else checkpoint_uri(args.checkpoint)
    )
    if urlsplit(location).scheme == "file" and not Path(shown(location)).is_dir():
        raise BoardstreamError(f"no checkpoint at {shown(location)}")  # before a JVM starts
    spark = spark_session(settings, "state-show", master="local[1]", progress=False)
    spark.sparkContext.setLogLevel("ERROR")
    checkpoint = require_checkpoint(CheckpointFiles(spark), location)
    for line in state_report(spark, checkpoint, args.key, args.var, args.limit):
        print(line, flush=True)
    return 0


def _pipelines(args: argparse.Namespace, settings: Settings) -> int:
    """The declarations of the settings' directory: a bad one is refused (exit 2) whatever the
    action, so what `list` and `show` print is what the jobs will run."""
    from boardstream import pipelines

    if args.action == "check":
        pipelines.check_file(args.file, settings.pipelines_dir)
        print("ok")
        return 0
    declared = pipelines.load_directory(settings.pipelines_dir)
    if args.action == "show":
        print(pipelines.to_yaml(pipelines.find(declared, args.name).pipeline), end="")
        return 0
    for name, (file, pipeline) in declared.items():
        print(
            f"{name}: {pipeline.stream.topic} ⋈ {pipeline.table.topic} ({pipeline.join.mode}) "
            f"-> {pipeline.sink.table}  [{file}]"
        )
    return 0


def _reconcile(args: argparse.Namespace, settings: Settings) -> int:
    """Run the reconcile (or repair) job under spark-submit; its exit code is the verdict."""
    if args.command == "repair":
        job, job_args = "board-detail-repair", ["--run", str(args.run)]
        if args.join_mode:
            job_args += ["--join-mode", args.join_mode]
    else:
        job, job_args = "reconcile", []
        job_args += [
            "--stall-after",
            args.stall_after,
            "--unmatched-timeout",
            args.unmatched_timeout,
        ]
        if args.full:
            job_args.append("--full")
    job_args += ["--pipeline", args.pipeline]
    for flag in ("join_checkpoint", "sink_checkpoint"):
        if getattr(args, flag):
            job_args += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    # An incremental run's driver compiles with C1 only (spark/jit.py); a full run's keeps C2.
    incremental = args.command == "reconcile" and not args.full
    return _submit(settings, job, job_args, short_lived=incremental)


# The generator's options as flags (not start_ms: demo data is always timestamped the same way).
_GENERATOR_FLAGS = {f.name for f in fields(GeneratorOptions) if f.name != "start_ms"} | {
    "production_scale"
}


def _generator_arguments(
    parser: argparse.ArgumentParser, defaults: GeneratorOptions | None
) -> None:
    """The data generator's flags; with ``defaults=None`` a flag left out is left out of the
    parsed arguments (so the demo_data DAG's own defaults apply)."""

    def default(name: str) -> object:
        return argparse.SUPPRESS if defaults is None else getattr(defaults, name, False)

    parser.add_argument("--members", type=count, default=default("members"))
    parser.add_argument("--boards", type=count, default=default("boards"))
    parser.add_argument(
        "--production-scale",
        action="store_true",
        default=default("production_scale"),
        help="442,128 members and 447,017 boards (overrides --members/--boards)",
    )
    parser.add_argument("--seed", type=int, default=default("seed"), help="same seed, same records")
    for flag, kind, text in (
        ("--update-ratio", ratio, "member updates per member (e.g. 0.2)"),
        ("--deletes", count, "member tombstones"),
        ("--late-members", count, "members produced after their boards"),
        ("--orphans", count, "boards whose member never comes"),
        ("--malformed", count, "records a job must dead-letter"),
    ):
        parser.add_argument(flag, type=kind, default=default(flag[2:].replace("-", "_")), help=text)


# A reStructuredText literal (``x``) or a Markdown one (`x`), as docstrings and help texts write it.
_LITERAL = re.compile(r"``?([^`]+?)``?")


class _Parser(argparse.ArgumentParser):
    """Bad flags are user errors like any other: one line naming the problem, exit 2 (argparse
    would print the whole usage first). Subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def format_help(self) -> str:
        """Descriptions are docstrings, marked up for Sphinx: a terminal shows their literals
        plainly, not between backticks."""
        return _LITERAL.sub(r"\1", super().format_help())


Handler = Callable[[argparse.Namespace, Settings], int]


def _command(
    commands: argparse._SubParsersAction, name: str, handler: Handler, **kwargs: Any
) -> argparse.ArgumentParser:
    """A subcommand whose parsed arguments are run by ``handler``."""
    parser = commands.add_parser(name, **kwargs)
    parser.set_defaults(handler=handler)
    return parser


class _Command(NamedTuple):
    handler: Handler
    help: str
    description: str | None = None


_COMMANDS = {
    "setup": _Command(
        _setup,
        "fetch the Kafka broker and Spark connector jars, build the join's operator and "
        "the drivers' class archive",
    ),
    "stack": _Command(_stack, "start, stop or show the local services"),
    "topics": _Command(
        _topics,
        "create or describe topics (by default the platform's)",
        "create without --topic creates the platform's topics (--pipeline NAME: that declared "
        "pipeline's); with --topic it creates that topic (repeatable), e.g. topics create "
        "--topic orders --partitions 6 --config cleanup.policy=compact --config "
        "retention.ms=86400000. Both actions warn "
        "(and describe marks EXPIRY RISK) when an output topic may delete records before "
        "the board topic does.",
    ),
    "produce": _Command(
        _produce,
        "produce seeded member and board records (--pipeline NAME: a declared pipeline's table "
        "rows and stream records, --members and --boards counting them)",
    ),
    "demo": _Command(
        _demo,
        "through the local Airflow: load demo data, run the pipeline, reconcile",
        "Needs the local Airflow (boardstream stack up --airflow). Generator flags "
        "left out take the demo_data DAG's defaults (5,000 members, 8,000 boards, every join "
        "case).",
    ),
    "aggregate": _Command(
        _aggregate,
        "run one of the board domain's aggregations (spark-submit)",
        "boards-per-member (table count), member-sessions (30-minute sessions), "
        "boards-per-city (per minute); arguments after -- go to the job, e.g. -- --trigger "
        "processing-time",
    ),
    "job": _Command(
        _job,
        "run a Spark job with spark-submit (arguments after -- go to the job)",
        "e.g. boardstream job run board-detail-join -- --trigger processing-time",
    ),
    "compaction": _Command(
        _compaction,
        "measure compacted topics and tune their cleaner settings",
        "apply is a dry run unless --execute is given; every applied change is"
        " logged in compaction_tuning_log and can be rolled back with --change ID",
    ),
    "pipelines": _Command(
        _pipelines,
        "list, check or show the pipeline declarations (BOARDSTREAM_PIPELINES_DIR)",
        "check FILE prints ok, or the one line naming the file, the key and the problem and "
        "exits 2; it checks FILE beside the directory's declarations (no shared name, written "
        "topic or sink table). show NAME prints the declaration as resolved, derived names "
        "included.",
    ),
    "state": _Command(
        _state,
        "show what a streaming job holds in its state store (from its checkpoint)",
        "e.g. boardstream state show --pipeline orders --key c17 (a pipeline's join), or "
        "--checkpoint var/checkpoints/window-count-... (any stateful query)",
    ),
    "reconcile": _Command(
        _reconcile, "prove board-detail and board_detail hold every source board (exit 1 if not)"
    ),
    "repair": _Command(
        _reconcile, "re-join what a reconciliation run found missing, then reconcile again"
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="boardstream", description=__doc__.splitlines()[0])
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also show the Kafka client's, Spark's and Great Expectations' own logs",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parsers = {
        name: _command(commands, name, handler, help=text, description=description)
        for name, (handler, text, description) in _COMMANDS.items()
    }

    parsers["setup"].add_argument(
        "--no-fetch",
        action="store_true",
        help="only build the join's operator and the drivers' class archive (the jars come from "
        "elsewhere, e.g. an image build)",
    )

    stack = parsers["stack"]
    stack.add_argument("action", choices=["up", "down", "status"])
    stack.add_argument("--postgres", action="store_true", help="also start PostgreSQL (up)")
    stack.add_argument(
        "--airflow", action="store_true", help="also start Airflow standalone with its UI (up)"
    )
    stack.add_argument(
        "--spark-cluster",
        action="store_true",
        help="also start a Spark standalone master and worker (up), and say how jobs reach them",
    )
    stack.add_argument(
        "--hdfs",
        action="store_true",
        help="also start HDFS, a NameNode and a DataNode (up): hdfs://127.0.0.1:9000 unless "
        "BOARDSTREAM_HDFS_HOST or BOARDSTREAM_HDFS_NAMENODE_PORT say otherwise",
    )
    stack.add_argument(
        "--brokers",
        type=int,
        choices=CLUSTER_SIZES,
        help="Kafka brokers (up): 1, or 3 in a KRaft quorum, each at the next ports "
        "(default: BOARDSTREAM_BROKERS, 1)",
    )
    stack.add_argument(
        "--only",
        action="append",
        metavar="SERVICE",
        help="start this service and not the broker (up, repeatable): one host's part of a "
        "cluster. SERVICE as status names it: kafka, postgres, namenode, datanode, "
        "spark-master, spark-worker, airflow, edge-worker (another host's Airflow's tasks)",
    )

    topics = parsers["topics"]
    topics.add_argument("action", choices=["create", "describe"])
    topics.add_argument(
        "--pipeline",
        metavar="NAME",
        help="a pipeline's six topics, as its declaration in BOARDSTREAM_PIPELINES_DIR names "
        "them (default: the platform's, board_detail's on the settings' names)",
    )
    topics.add_argument(
        "--topic", action="append", help="create or describe only this topic (repeatable)"
    )
    topics.add_argument(
        "--partitions",
        type=positive,
        help="partitions of the topics --topic creates (default: BOARDSTREAM_PARTITIONS)",
    )
    topics.add_argument(
        "--config",
        type=config_entry,
        action="append",
        metavar="KEY=VALUE",
        help="a topic config of the topics --topic creates (repeatable)",
    )
    topics.add_argument("--all-configs", action="store_true", help="also print default configs")

    produce = parsers["produce"]
    _generator_arguments(produce, GeneratorOptions())
    produce.add_argument("--manifest", type=Path, help="where to write the manifest JSON")
    add_pipeline_argument(produce)

    demo = parsers["demo"]
    _generator_arguments(demo, None)

    aggregate = parsers["aggregate"]
    aggregate.add_argument("name", choices=list(PRESETS))
    aggregate.add_argument("job_args", nargs=argparse.REMAINDER)

    job = parsers["job"]
    job_actions = job.add_subparsers(dest="action", required=True, metavar="ACTION")
    job_actions.add_parser("list", help="print the jobs")
    job_run = job_actions.add_parser(
        "run",
        help="run one job under spark-submit",
        description="Runs JOB under spark-submit with the Kafka connector from the local jar\n"
        "cache and the master from the settings; arguments after -- go to the job.",
        epilog="jobs:\n"
        + "".join(f"  {name}\n" for name in sorted(JOBS))
        + "\ne.g. boardstream job run board-detail-join -- --trigger processing-time",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    job_run.add_argument("name", metavar="JOB", choices=sorted(JOBS), help="the job to run")
    job_run.add_argument("job_args", nargs=argparse.REMAINDER, help="the job's own arguments")

    compaction = parsers["compaction"]
    compaction.add_argument(
        "action", choices=["measure", "recommend", "apply", "rollback", "verify"]
    )
    compaction.add_argument("--topic", action="append", help="topic name pattern (repeatable)")
    compaction.add_argument("--exclude", action="append", help="topic pattern never touched")
    compaction.add_argument(
        "--reconciled",
        action="append",
        help="pattern of topics reconciliation reads (default: the member and board topics)",
    )
    compaction.add_argument("--max-replay-waste", type=fraction, default=Targets.max_replay_waste)
    compaction.add_argument(
        "--update-rate", type=positive_number, help="expected records/s (default: as measured)"
    )
    compaction.add_argument(
        "--restore-rate", type=positive_number, default=Targets.restore_rate, help="records/s"
    )
    compaction.add_argument("--restore-budget", type=duration_ms, default="5m")
    compaction.add_argument("--max-consumer-downtime", type=duration_ms, default="1d")
    compaction.add_argument("--reconciliation-interval", type=duration_ms, default="15m")
    compaction.add_argument("--execute", action="store_true", help="apply: really alter configs")
    compaction.add_argument("--change", type=positive, help="rollback/verify: the change id")

    pipeline_actions = parsers["pipelines"].add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    pipeline_actions.add_parser("list", help="one line per declared pipeline")
    pipeline_actions.add_parser("check", help="check a declaration file").add_argument(
        "file", metavar="FILE", type=Path
    )
    pipeline_actions.add_parser(
        "show", help="print a pipeline's resolved declaration"
    ).add_argument("name", metavar="NAME")

    state = parsers["state"]
    state.add_argument("action", choices=["show"])
    add_pipeline_argument(state)
    state.add_argument(
        "--checkpoint",
        help="the query's checkpoint: a path or hdfs://… URI; default: the pipeline's join's",
    )
    state.add_argument("--key", help="only the rows with this key")
    state.add_argument("--var", help="only this state variable (timers included)")
    state.add_argument("--limit", type=positive, default=20, help="rows shown per variable")

    reconcile = parsers["reconcile"]
    reconcile.add_argument(
        "--full",
        action="store_true",
        help="re-read every topic and the whole table (default: an incremental run, the "
        "records since the last run and the rows that changed)",
    )
    reconcile.add_argument(
        "--stall-after",
        type=duration_text,
        default=Reconcile().stall_after,
        help="input waiting longer than this is a stalled job (default: twice the schedule)",
    )
    reconcile.add_argument(
        "--unmatched-timeout",
        type=duration_text,
        default=Join().grace,
        help="the join's unmatched timeout: boards waiting past it plus the stall age are overdue",
    )
    repair = parsers["repair"]
    repair.add_argument("--run", type=positive, required=True, help="reconciliation run id")
    repair.add_argument(
        "--join-mode", choices=["latest", "as-of"], help="default: the pipeline's declared mode"
    )
    for command in (reconcile, repair):
        add_pipeline_argument(command)
        command.add_argument("--join-checkpoint", help="default: the join job's")
        command.add_argument("--sink-checkpoint", help="default: the sink job's")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure(args.verbose)
    if args.verbose:
        os.environ[VERBOSE_ENV] = "1"  # for the jobs it starts too
    try:
        settings = Settings()
    except ValidationError as error:
        problems = "; ".join(
            f"BOARDSTREAM_{'_'.join(str(part) for part in e['loc']).upper()}: {e['msg']}"
            for e in error.errors()
        )
        print(f"boardstream: error: bad setting: {problems}", file=sys.stderr)
        return 2
    try:
        return args.handler(args, settings)
    except InvalidOptionError as error:
        print(f"boardstream: error: {flag_message(error)}", file=sys.stderr)
        return 1
    except (ServiceUnreachableError, PipelineDeclarationError) as error:  # refused before a start
        print(f"boardstream: error: {error}", file=sys.stderr)
        return 2
    except BoardstreamError as error:
        print(f"boardstream: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("boardstream: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
