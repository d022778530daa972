"""The board-detail join job: ``member`` + ``board`` → ``board-detail`` / ``-unmatched`` / ``-dlq``.

One Kafka source reads both topics, so one checkpoint tracks both. Records are parsed on the
JVM; malformed ones go straight to the DLQ, the rest are grouped by the table's key into the
stateful operator on the RocksDB state store: the JVM's for any declared pipeline
(:func:`declared_join`), or Python's for board_detail
(:class:`~boardstream.joins.processor.BucketedMemberJoin`).

The source also reads the tick topic (``<board topic>-join-tick``). Unmatched timeouts are
processing-time timers, and an available-now run has no no-data batches (it could not finish
otherwise), so timers fire only in a batch with data: a quiet input would keep a board of a
deleted member pending through every run. Each available-now run therefore first writes one
tick record (acks=all), which makes its first batch a data batch; Spark fires every key's
expired timers in each batch, and the tick rows themselves emit nothing.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from boardstream import dead_letters
from boardstream.errors import BoardstreamError, InvalidOptionError
from boardstream.joins import schema
from boardstream.joins.jvm_operator import STATE_VARIABLES, stateful_join
from boardstream.joins.layout import JoinLayout
from boardstream.joins.member_table import JoinOptions
from boardstream.joins.parse import parse, parse_declared, routed, routed_declared
from boardstream.joins.processor import (
    DEAD_LETTER_BUCKET,
    OUTPUT_DDL,
    TICK_BUCKET,
    BucketedMemberJoin,
)
from boardstream.joins.topics import Deployed, JoinTopics
from boardstream.kafka.clients import (
    DeliveryErrors,
    admin_client,
    reliable_producer,
    require_topics,
)
from boardstream.kafka.limits import require_fit, spark_producer_limit
from boardstream.pipelines import Pipeline, shipped, with_article
from boardstream.settings import Settings
from boardstream.spark import streaming
from boardstream.spark.checkpoint_files import CheckpointFiles
from boardstream.spark.checkpoint_guard import guard_checkpoint, record_identity, recorded_identity

QUERY_NAME = "board-detail-join"
BOARD_DETAIL = shipped("board_detail")
BOARD_DETAIL_LAYOUT = JoinLayout.of(BOARD_DETAIL)
JVM, PYTHON = "jvm", "python"
ENGINES = (JVM, PYTHON)
# The option that bounds every input record's size, as messages name it.
MAX_RECORD_BYTES = "max record bytes"
# A joined or unmatched record holds at most one board's and one member's text (parsing keeps
# strings as they are and to_json escapes no more than valid input JSON must), plus field
# names, provenance numbers, the key (an id of up to 64 characters) and Kafka's framing.
OUTPUT_OVERHEAD_BYTES = 4_096


# An engine's state cannot be read by the other: per bucket (python) or per member (jvm).
ENGINE_ADVICE = {
    "engine": "The two join engines keep their state in different layouts and neither reads "
    "the other's (a checkpoint without an engine was written by the python engine): resume it "
    "with the engine that wrote it, or rebuild the state by running the new engine on a new "
    "checkpoint, which re-reads member and board from the beginning (board-detail consumers "
    "are idempotent: a rewritten record replaces its earlier copy).",
    "state_variables": "The JVM engine keeps each member's waiting boards in a state variable "
    "of their own (so reconciliation reads them without reading every member); a checkpoint "
    "written before that keeps them inside `member` and cannot be resumed by this version: "
    "rebuild the state by running the join on a new checkpoint, which re-reads member and board "
    "from the beginning (board-detail consumers are idempotent: a rewritten record replaces its "
    "earlier copy), or resume it with the version that wrote it.",
    "state_layout": "The join's state keeps each record in its declaration's fields: a "
    "checkpoint written under other fields (added, removed, renamed or retyped) would be read "
    "as this declaration's. Resume it with the declaration that wrote it, or run the join on a "
    "new checkpoint, which re-reads both topics from the beginning (the joined topic's "
    "consumers are idempotent: a rewritten record replaces its earlier copy).",
}


@dataclass(frozen=True)
class JoinJobConfig(streaming.QueryConfig):
    options: JoinOptions = field(default_factory=JoinOptions)
    max_record_bytes: int = 256 * 1024
    max_offsets_per_trigger: int | None = None
    # The stateful operator: the JVM's, keyed by member (joins/jvm_operator.py), or Python's,
    # keyed by bucket (joins/processor.py). Fixed for the life of a checkpoint. The JVM's is the
    # default: a batch costs what its records cost (docs/BENCHMARKS.md).
    engine: str = JVM
    # Python engine: members share a state row per bucket; fewer, larger rows mean fewer state
    # round trips per micro-batch (docs/BENCHMARKS.md: 128 beat 32 and 1,024).
    state_buckets: int = 128
    query: str = QUERY_NAME

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.engine not in ENGINES:
            raise InvalidOptionError(
                f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}", "engine"
            )
        if self.trigger == streaming.REAL_TIME and self.engine != JVM:
            raise InvalidOptionError(
                f"trigger {streaming.REAL_TIME} runs engine {JVM} only: Spark's real-time mode "
                "does not run the Python transformWithState",
                "trigger",
                "engine",
            )

    @property
    def query_name(self) -> str:
        return self.query


def declared_join(
    raw: DataFrame,
    pipeline: Pipeline,
    topics: JoinTopics,
    config: JoinJobConfig,
) -> DataFrame:
    """Kafka rows (topic, key, value) for all three outputs of any declared pipeline, joined
    by the JVM operator from ``raw`` (the Kafka source of its stream, table and tick topics)."""
    contract, layout = schema.Contract.of(pipeline), JoinLayout.of(pipeline)
    parsed = parse_declared(
        raw, contract, topics.stream, topics.table, config.max_record_bytes, topics.tick
    )
    joined = stateful_join(
        routed_declared(parsed, pipeline, layout),
        layout,
        contract.stream_label,
        config.options,
        update=config.trigger == streaming.REAL_TIME,
    )
    return kafka_rows(joined, topics, layout)


def join_output(
    spark: SparkSession, settings: Settings, config: JoinJobConfig, deployed: Deployed
) -> DataFrame:
    """Kafka rows (topic, key, value) for all three outputs."""
    topics = deployed.topics
    raw = streaming.kafka_stream(
        spark, settings, [topics.table, topics.stream, topics.tick], config.max_offsets_per_trigger
    )
    if config.engine == JVM:
        return declared_join(raw, deployed.pipeline, topics, config)
    parsed = parse(
        raw,
        settings.member_topic,
        settings.board_topic,
        config.max_record_bytes,
        tick_topic=settings.join_tick_topic,
    )
    bucket = (
        F.when(F.col("dead_letter").isNotNull(), F.lit(DEAD_LETTER_BUCKET))
        .when(F.col("kind") == "tick", F.lit(TICK_BUCKET))
        .otherwise(F.pmod(F.xxhash64("member_id"), F.lit(config.state_buckets)))
        .cast("int")
    )
    joined = (
        routed(parsed)
        .withColumn("bucket", bucket)  # last, so rows keep schema.INPUT's positions
        .groupBy("bucket")
        .transformWithStateInPandas(
            statefulProcessor=BucketedMemberJoin(config.options),
            outputStructType=OUTPUT_DDL,
            outputMode="Append",
            timeMode="ProcessingTime",
        )
    )
    return kafka_rows(joined, topics, BOARD_DETAIL_LAYOUT)


def kafka_rows(joined: DataFrame, topics: JoinTopics, layout: JoinLayout) -> DataFrame:
    """The processor's output (``layout.output`` rows) as Kafka rows (topic, key, value),
    routed by outcome; shared by the stream and by repair, so both write identical records.
    A record's key is its id as text (an int64 id's decimal digits, as the stream's own keys
    are written), UTF-8 encoded."""
    outcome = F.col("outcome")
    return joined.select(
        F.when(outcome == "joined", topics.joined)
        .when(outcome == "unmatched", topics.unmatched)
        .otherwise(topics.dead_letters)
        .alias("topic"),
        F.coalesce(
            F.unbase64("dead_key"), F.col(layout.id_column).cast("string").cast("binary")
        ).alias("key"),
        F.coalesce(F.col("dead_letter"), F.to_json(F.struct(*layout.payload))).alias("value"),
    )


def require_output_fits(settings: Settings, config: JoinJobConfig, topics: JoinTopics) -> None:
    """Refuse to start if a dead letter or a joined record could exceed the producer's or its
    topic's size limit (it would fail its batch on every run)."""
    bound = config.max_record_bytes
    joined = 2 * bound + OUTPUT_OVERHEAD_BYTES
    inputs = (
        f"{with_article(topics.stream)} and {with_article(topics.table)} record of up to "
        f"{bound:,} bytes each, the {MAX_RECORD_BYTES}"
    )
    require_fit(
        admin_client(settings),
        settings,
        spark_producer_limit(settings.to_spark_kafka_options()),
        {
            topics.dead_letters: (
                dead_letters.largest_dead_letter(bound),
                f"a dead letter (keeping up to {bound:,} bytes of key and value, the "
                f"{MAX_RECORD_BYTES})",
            ),
            topics.joined: (joined, f"a joined record ({inputs})"),
            topics.unmatched: (joined, f"an unmatched record ({inputs})"),
        },
        bound_by=MAX_RECORD_BYTES,
    )


def require_real_time_slots(spark: SparkSession, settings: Settings, sources: JoinTopics) -> None:
    """Refuse a real-time query Spark could not schedule: it runs a long-lived task per source
    partition and per shuffle partition at once, and with fewer task slots it would wait."""
    topics = [sources.table, sources.stream, sources.tick]
    metadata = require_topics(admin_client(settings), settings, topics)
    sources = sum(len(metadata.topics[topic].partitions) for topic in topics)
    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions"))
    slots = spark.sparkContext.defaultParallelism
    if slots < sources + shuffle:
        raise InvalidOptionError(
            f"trigger {streaming.REAL_TIME} runs a task per source partition ({sources} in "
            f"{', '.join(topics)}) and per shuffle partition ({shuffle}) at once, "
            f"{sources + shuffle} task slots, and Spark has {slots} "
            f"(master {spark.sparkContext.master}): give it at least {sources + shuffle}, "
            f"e.g. BOARDSTREAM_SPARK_MASTER=local[{sources + shuffle}]",
            "trigger",
        )


def send_tick(settings: Settings, topic: str, query: str) -> None:
    """One record on the tick topic, acknowledged by all replicas before the run starts, so the
    run's first micro-batch has data and fires the timers that expired since the last run."""
    errors = DeliveryErrors()
    producer = reliable_producer(settings, on_delivery=errors)
    tick = json.dumps({"query": query, "at_ms": int(time.time() * 1000)})
    producer.produce(topic, tick.encode())
    if producer.flush(settings.connect_timeout_s * 3) or errors.count:
        raise BoardstreamError(
            f"could not write the tick to {topic}: "
            f"{errors.first or 'timeout'} (`boardstream topics create` creates the topic)"
        )


def name_legacy_engine(files: CheckpointFiles, checkpoint: str) -> None:
    """Checkpoints from before the JVM engine name no engine: their state is the python
    engine's (per bucket). Say so in their identity, so that the guard compares engines by name
    and reconciliation reads the state in the layout it has. The JVM engine's from before its
    layout was derived from a declaration name no layout: theirs is board_detail's, the one
    pipeline there was (its derived layout is pinned to it: tests/unit/joins)."""
    identity = recorded_identity(files, checkpoint)
    if identity and "engine" not in identity:
        record_identity(files, checkpoint, {**identity, "engine": PYTHON})
    elif identity and identity["engine"] == JVM and "state_layout" not in identity:
        layout = BOARD_DETAIL_LAYOUT.state_identity
        record_identity(files, checkpoint, {**identity, "state_layout": layout})


def start_join(
    spark: SparkSession,
    settings: Settings,
    config: JoinJobConfig,
    deployed: Deployed | None = None,
) -> StreamingQuery:
    """The join query of ``deployed`` (board_detail on the settings' topics if None)."""
    deployed = Deployed.shipped(settings) if deployed is None else deployed
    topics, pipeline = deployed.topics, deployed.pipeline
    if config.engine == PYTHON and pipeline != BOARD_DETAIL:
        raise InvalidOptionError(
            f"engine {PYTHON} joins board_detail only; {pipeline.name} runs on engine {JVM}",
            "engine",
        )
    identity = {
        # The tick topic is not listed: it is named after the stream's topic and holds no data,
        # so a checkpoint from before it existed resumes (its partition is new to the source
        # and read from the start).
        "sources": [topics.table, topics.stream],
        "outputs": [topics.joined, topics.unmatched, topics.dead_letters],
        "join_mode": config.options.mode,
        "engine": config.engine,
        **(
            {"state_buckets": config.state_buckets}
            if config.engine == PYTHON
            else {
                "state_variables": list(STATE_VARIABLES),
                "state_layout": JoinLayout.of(pipeline).state_identity,
            }
        ),
    }
    # Refusals before the guard, which creates a new checkpoint.
    require_output_fits(settings, config, topics)
    if config.trigger == streaming.REAL_TIME:
        require_real_time_slots(spark, settings, topics)
    files, checkpoint = CheckpointFiles(spark), config.checkpoint_dir(settings)
    name_legacy_engine(files, checkpoint)
    # A checkpoint of another configuration is refused before anything is written (a tick).
    query = config.query_name
    guard_checkpoint(files, checkpoint, {"query": query, **identity}, ENGINE_ADVICE)
    streaming.configure_no_data_batches(spark, config.trigger)
    if config.trigger == streaming.AVAILABLE_NOW:
        send_tick(settings, topics.tick, query)
    return streaming.start_to_kafka(
        join_output(spark, settings, config, deployed),
        settings,
        query,
        checkpoint,
        config.trigger,
        config.interval,
        identity,
    )
