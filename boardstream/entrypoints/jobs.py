"""The Spark jobs' command lines: what ``jobs/*.py`` (spark-submit's applications) run.

Each main parses its flags into the job's typed config, then starts the job through its
domain; a config the domain refuses is reported under the flags' names (exit 2, before Spark).
"""

from __future__ import annotations

import argparse
import logging
import re
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import NoReturn

from pydantic import ValidationError
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from boardstream import joins, sink
from boardstream.aggregations import table_count
from boardstream.aggregations.event_time import FINAL, UPDATES, SessionSpec, WindowSpec
from boardstream.aggregations.event_time_job import (
    GROUP_BY,
    EventTimeConfig,
    start_event_time_count,
)
from boardstream.aggregations.holdings import ARRIVAL, ORDERS
from boardstream.aggregations.source import SourceOptions
from boardstream.aggregations.table_count import JOB as TABLE_COUNT
from boardstream.aggregations.table_count import TableCountConfig, start_table_count
from boardstream.entrypoints.argtypes import duration_ms, flag_message, options_from, positive
from boardstream.entrypoints.pipeline_option import (
    SHIPPED_PIPELINE,
    add_pipeline_argument,
    deployed,
)
from boardstream.errors import BoardstreamError, InvalidOptionError, ServiceUnreachableError
from boardstream.joins import job as join_job
from boardstream.joins.job import ENGINES, JoinJobConfig
from boardstream.joins.member_table import AS_OF, LATEST, JoinOptions
from boardstream.joins.topics import Deployed
from boardstream.logs import configure, verbose_requested
from boardstream.pipelines import query_name, shipped
from boardstream.preflight import require
from boardstream.settings import Settings
from boardstream.sink import job as sink_job
from boardstream.sink.job import SinkJobConfig, SinkTarget
from boardstream.spark import streaming
from boardstream.spark.session import spark_session

logger = logging.getLogger(__name__)


def run_job(
    name: str,
    config: streaming.QueryConfig,
    start: Callable[[SparkSession, Settings], StreamingQuery],
) -> int:
    """A job's main: settings, a session, the query run to its end on its checkpoint's lease;
    the exit code says how (2: the job refused to start, naming the flag to change, its broker
    or database not answering, or its checkpoint in use; 1: the query failed, its error raised
    by :func:`streaming.run`, or was stopped when its driver lost its checkpoint's lease). A
    query that returns has finished or was stopped, even one whose ``exception()`` is the batch
    its stop cancelled (Spark's view of it, not a failure)."""
    configure(verbose_requested())  # the CLI passes --verbose on in the environment
    try:
        settings = Settings()
    except ValidationError as error:
        logger.error("%s: bad settings: %s", name, error)
        return 2
    try:
        require(settings, name)
    except ServiceUnreachableError as error:
        logger.error("%s", error)
        return 2
    spark = spark_session(settings, name)
    # spark-submit logs at INFO, whole query plans included; per-batch progress is in
    # the database's progress store instead (boardstream.stream_progress).
    spark.sparkContext.setLogLevel("WARN")
    try:
        # This process is the driver: it ends itself in time if its lease is lost.
        streaming.run(spark, settings, lambda: start(spark, settings), config, exit_when_lost=True)
    except InvalidOptionError as error:  # e.g. a record that could outgrow a topic's limit
        logger.error("%s: %s", name, flag_message(error))
        return 2
    except (streaming.CheckpointLeaseLostError, streaming.InputLostError) as error:  # it failed
        logger.error("%s: %s", name, error)
        return 1
    except BoardstreamError as error:  # e.g. a checkpoint in use, or of other settings
        logger.error("%s: %s", name, error)
        return 2
    return 0


def _first_line(module: ModuleType) -> str:
    """A job's description is its module's docstring's first line."""
    return (module.__doc__ or "").splitlines()[0]


def _query_arguments(
    parser: argparse.ArgumentParser,
    max_offsets: int | None,
    triggers: tuple[streaming.Trigger, ...] = streaming.TRIGGERS,
) -> None:
    """The options every streaming job takes."""
    parser.add_argument("--trigger", choices=triggers, default=streaming.AVAILABLE_NOW)
    parser.add_argument(
        "--interval",
        default="1 second",
        help="micro-batch interval (processing-time); checkpoint interval, at least 5 seconds "
        "(real-time)",
    )
    parser.add_argument("--max-offsets-per-trigger", type=positive, default=max_offsets)
    parser.add_argument("--checkpoint", default=None, help="a path or a Hadoop filesystem URI")


_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def field_name(text: str) -> str:
    """argparse type: a JSON field path like ``customer_id`` or ``profile.region``."""
    if not _FIELD.match(text):
        raise argparse.ArgumentTypeError(f"not a field name (letters, digits, _ and .): {text!r}")
    return text


def _source_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source-topic", dest="topic", metavar="SOURCE_TOPIC", required=True)
    parser.add_argument("--output-topic", required=True, help="compacted, keyed by group")
    parser.add_argument("--value-field", type=field_name, help="JSON field instead of the value")
    parser.add_argument("--time-field", type=field_name, help="JSON field instead of record time")
    parser.add_argument("--dlq-topic", help="default: <output topic>-dlq")


def _refuse(parser: argparse.ArgumentParser, error: InvalidOptionError) -> NoReturn:
    parser.error(flag_message(error))


# The join flags, each the declaration's setting unless given (JoinOptions.of).
_JOIN_FLAGS = (
    "mode",
    "unmatched_timeout_ms",
    "history_retention_ms",
    "deleted_retention_ms",
    "max_pending_per_member",
)


def join_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="board_detail_join", description=_first_line(join_job))
    add_pipeline_argument(parser)
    parser.add_argument(
        "--join-mode", dest="mode", choices=[LATEST, AS_OF], help="default: the declaration's"
    )
    _query_arguments(parser, max_offsets=None, triggers=streaming.REAL_TIME_TRIGGERS)
    for flag, text in (
        ("--unmatched-timeout", "how long a stream record waits for its table row"),
        ("--history-retention", "as-of mode"),
        ("--deleted-retention", "how long a deleted table row is remembered"),
    ):
        dest = flag[2:].replace("-", "_") + "_ms"
        parser.add_argument(
            flag,
            dest=dest,
            metavar="DURATION",
            type=duration_ms,
            help=f"{text}; default: the declaration's",
        )
    parser.add_argument(
        "--max-pending-per-member", type=positive, help="default: the declaration's"
    )
    parser.add_argument("--max-record-bytes", type=positive, default=256 * 1024)
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default=JoinJobConfig.engine,
        help="the stateful operator: jvm (state per member) or python (state per bucket); "
        "fixed for the life of a checkpoint",
    )
    parser.add_argument(
        "--state-buckets",
        type=positive,
        default=JoinJobConfig.state_buckets,
        help="python engine; fixed for the life of a checkpoint",
    )
    return parser


def join_config(argv: Sequence[str] | None = None) -> tuple[JoinJobConfig, Deployed | None]:
    """The join's config and the pipeline it joins (None: the shipped one)."""
    parser = join_parser()
    args = parser.parse_args(argv)
    chosen = deployed(parser, args.pipeline)
    declared = shipped(SHIPPED_PIPELINE) if chosen is None else chosen.pipeline
    given = {name: getattr(args, name) for name in _JOIN_FLAGS if getattr(args, name) is not None}
    try:
        options = JoinOptions.of(declared.join, **given)
        config = options_from(
            JoinJobConfig, args, options=options, query=query_name(args.pipeline, "join")
        )
    except InvalidOptionError as error:
        _refuse(parser, error)
    return config, chosen


def join_main(argv: Sequence[str] | None = None) -> int:
    config, chosen = join_config(argv)
    return run_job(
        config.query_name,
        config,
        lambda spark, settings: joins.start(spark, settings, config, chosen),
    )


def sink_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="board_detail_sink", description=_first_line(sink_job))
    add_pipeline_argument(parser)
    _query_arguments(parser, max_offsets=SinkJobConfig.max_offsets_per_trigger)
    return parser


def sink_config(argv: Sequence[str] | None = None) -> tuple[SinkJobConfig, SinkTarget | None]:
    """The sink's config and the pipeline whose table it loads (None: the shipped one)."""
    parser = sink_parser()
    args = parser.parse_args(argv)
    chosen = deployed(parser, args.pipeline)
    target = None if chosen is None else SinkTarget.declared(chosen.pipeline)
    return options_from(SinkJobConfig, args, query=query_name(args.pipeline, "sink")), target


def sink_main(argv: Sequence[str] | None = None) -> int:
    config, target = sink_config(argv)
    return run_job(
        config.query_name,
        config,
        lambda spark, settings: sink.start(spark, settings, config, target),
    )


def table_count_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="table_count", description=_first_line(table_count))
    _source_arguments(parser)
    parser.add_argument("--order", choices=ORDERS, default=ARRIVAL)
    parser.add_argument(
        "--state-ttl",
        dest="state_ttl_ms",
        metavar="STATE_TTL",
        type=duration_ms,
        help="forget entities not updated for",
    )
    _query_arguments(parser, max_offsets=None)
    return parser


def table_count_config(argv: Sequence[str] | None = None) -> TableCountConfig:
    args = table_count_parser().parse_args(argv)
    return options_from(TableCountConfig, args, source=options_from(SourceOptions, args))


def table_count_main(argv: Sequence[str] | None = None) -> int:
    config = table_count_config(argv)
    return run_job(
        TABLE_COUNT, config, lambda spark, settings: start_table_count(spark, settings, config)
    )


def _event_time_parser(job: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=job.replace("-", "_"), description=description)
    _source_arguments(parser)
    parser.add_argument(
        "--group-by",
        choices=GROUP_BY,
        default="value",
        help="the value (or --value-field) or the record key",
    )
    parser.add_argument("--grace", type=_non_negative_duration, default="0s")
    _query_arguments(parser, max_offsets=None)
    return parser


def _non_negative_duration(text: str) -> int:
    return 0 if text.strip() in ("0", "0s", "0ms") else duration_ms(text)


def _event_time_config(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    spec: Callable[[argparse.Namespace], WindowSpec | SessionSpec],
    job: str,
) -> EventTimeConfig:
    args = parser.parse_args(argv)
    try:
        chosen = spec(args)
    except InvalidOptionError as error:
        _refuse(parser, error)
    source = options_from(SourceOptions, args)
    return options_from(EventTimeConfig, args, job=job, source=source, spec=chosen)


def _event_time_main(config: EventTimeConfig) -> int:
    return run_job(
        config.job, config, lambda spark, settings: start_event_time_count(spark, settings, config)
    )


def session_parser() -> argparse.ArgumentParser:
    parser = _event_time_parser("session-count", "Count events per session of activity, per group.")
    parser.add_argument("--gap", type=duration_ms, required=True, help="inactivity that ends one")
    parser.add_argument("--retention", type=duration_ms, default="1d")
    return parser


def _session_spec(args: argparse.Namespace) -> SessionSpec:
    return SessionSpec(args.gap, args.grace, args.retention)


def session_config(argv: Sequence[str] | None = None) -> EventTimeConfig:
    return _event_time_config(session_parser(), argv, _session_spec, "session-count")


def session_main(argv: Sequence[str] | None = None) -> int:
    return _event_time_main(session_config(argv))


def window_parser() -> argparse.ArgumentParser:
    parser = _event_time_parser(
        "window-count", "Count events per tumbling window of event time, per group."
    )
    parser.add_argument("--size", type=duration_ms, required=True)
    parser.add_argument("--emit", choices=(FINAL, UPDATES), default=FINAL)
    parser.add_argument("--retention", type=duration_ms, default="1d")
    return parser


def _window_spec(args: argparse.Namespace) -> WindowSpec:
    return WindowSpec(args.size, args.grace, args.retention, args.emit)


def window_config(argv: Sequence[str] | None = None) -> EventTimeConfig:
    return _event_time_config(window_parser(), argv, _window_spec, "window-count")


def window_main(argv: Sequence[str] | None = None) -> int:
    return _event_time_main(window_config(argv))
