"""A pipeline's sink job: its joined topic → its sink table, idempotently.

A streaming query over the joined topic whose ``foreachBatch`` upserts each micro-batch in one
transaction. Offsets are committed to the checkpoint only after the transaction, so a crash
replays the batch, and the upsert makes the replay harmless. A record that is not a valid joined
record goes to the DLQ, never silently away; so does one the database rejects (see
:meth:`BatchWriter.upsert_isolating`), or the batch would fail on it forever.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property

import sqlalchemy as sa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from sqlalchemy import make_url
from sqlalchemy.exc import DataError, IntegrityError

from boardstream import database, dead_letters
from boardstream.errors import BoardstreamError
from boardstream.failpoints import failpoint
from boardstream.joins import schema
from boardstream.joins.layout import JoinLayout
from boardstream.joins.topics import Deployed
from boardstream.kafka.clients import DeliveryErrors, admin_client, client_config, reliable_producer
from boardstream.kafka.limits import librdkafka_producer_limit, require_fit
from boardstream.locations import checkpoint_uri
from boardstream.pipelines import with_article
from boardstream.settings import Settings
from boardstream.sink.table import SinkTable
from boardstream.spark import checkpoint_lease, streaming
from boardstream.spark.checkpoint_files import CheckpointFiles
from boardstream.spark.checkpoint_guard import guard_checkpoint

QUERY_NAME = "board-detail-sink"
# Rows per fenced transaction of a batch (in key order, so each is a range of the table):
# SQLite has one write lock, and a batch of 100,000 rows held it 15-18 s, 20 s and more on a
# loaded machine, past the two thirds of the lease's TTL its renewals may be silent (the lease
# was given up mid-drain) and near other writers' busy timeout. 10,000 take about 1.5 s. A
# crash between two of them leaves some rows written: the upsert is idempotent and Spark replays
# the batch, as it does the isolating halves (BatchWriter.upsert_isolating).
WRITE_ROWS = 10_000
_CORRUPT = "_boardstream_corrupt_record"  # from_json's column for text that is not JSON


@dataclass(frozen=True)
class SinkJobConfig(streaming.QueryConfig):
    # Each batch is collected to the driver for the upsert: bound it.
    max_offsets_per_trigger: int | None = 100_000
    query: str = QUERY_NAME

    @property
    def query_name(self) -> str:
        return self.query


@dataclass(frozen=True)
class SinkTarget(Deployed):
    """What one pipeline's sink reads and writes: its joined topic (which it loads) and its
    dead letters', and the table and joined records' layout its declaration gives."""

    table: SinkTable = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "table", SinkTable.of(self.pipeline))

    @property
    def joined(self) -> str:
        return self.topics.joined

    @property
    def dead_letters(self) -> str:
        return self.topics.dead_letters

    @cached_property
    def record(self) -> tuple[tuple[str, str], ...]:
        """The joined records' columns and Spark types (:attr:`JoinLayout.record`)."""
        return JoinLayout.of(self.pipeline).record

    @cached_property
    def loaded_from(self) -> tuple[str, str]:
        """The columns keeping the joined record's own partition and offset, which the Kafka
        record gives, not its value."""
        sink = self.pipeline.sink
        partition, offset = (sink.column_of(f"joined.{p}") for p in ("ROWPARTITION", "ROWOFFSET"))
        assert partition is not None and offset is not None  # the model keeps all six
        return partition, offset


def _table_error(detail: Column, target: SinkTarget) -> Column:
    """Why a parsed record cannot be a row of ``target``'s table, from the table's own columns
    (NOT NULL, VARCHAR lengths, no U+0000 in text), or null. SQLite enforces none of the
    lengths, PostgreSQL fails the whole statement on one: checking first keeps the two alike
    and costs no database round trip."""
    not_json = detail.isNull() | detail[_CORRUPT].isNotNull()
    named = with_article(target.pipeline.name)
    checks = [(not_json, F.lit(f"not {named} record (not a JSON object)"))]
    carried = schema.names(target.record)
    table = target.table.table
    for column in table.columns:
        if column.name not in carried:
            continue  # provenance of the load, not of the record
        value = detail[column.name]
        where = f"{table.name}.{column.name}"
        if not column.nullable:
            checks.append((value.isNull(), F.lit(f"{where} is missing or null (NOT NULL)")))
        if isinstance(column.type, sa.String):
            checks.append(
                (
                    F.contains(value, F.lit(schema.FORBIDDEN_CHAR)),
                    F.lit(f"{where} contains U+0000, which text columns cannot hold"),
                )
            )
            if column.type.length is not None:
                checks.append(
                    (
                        F.char_length(value) > column.type.length,
                        F.concat(
                            F.lit(f"{where} is "),
                            F.char_length(value).cast("string"),
                            F.lit(f" characters, the column holds {column.type.length}"),
                        ),
                    )
                )
    error = F.lit(None).cast("string")
    for condition, message in reversed(checks):
        error = F.when(condition, message).otherwise(error)
    return error


def detail_rows(raw: DataFrame, target: SinkTarget) -> DataFrame:
    """Joined Kafka rows → the table's columns, plus ``error`` and, for a record the table
    cannot take, its dead letter (``dead_letter``)."""
    parsed = F.from_json(
        F.col("value").cast("string"),
        f"{schema.ddl(target.record)}, `{_CORRUPT}` string",
        {"columnNameOfCorruptRecord": _CORRUPT},
    )
    with_error = raw.withColumn("timestamp_ms", F.unix_millis(F.col("timestamp"))).withColumn(
        "error", _table_error(parsed, target)
    )
    prefix = dead_letters.DEFAULT_PREFIX_BYTES
    invalid = F.col("error").isNotNull()
    partition, offset = target.loaded_from
    return with_error.select(
        parsed.alias("d"),
        F.col("partition").alias(partition),
        F.col("offset").alias(offset),
        "timestamp_ms",
        "error",
        F.when(invalid, dead_letters.key_prefix(prefix)).alias("dead_key"),
        F.when(invalid, dead_letters.envelope(F.col("error"), prefix)).alias("dead_letter"),
        "key",
        "value",
    )


class BatchWriter:
    """``foreachBatch`` callback: upsert valid rows, dead-letter the rest. Run by the query of
    ``checkpoint``, its upserts commit only while this driver holds that checkpoint's lease: a
    driver cut off for longer than the TTL, whose successor runs, writes nothing more, and one
    that never held it writes nothing at all. Without a checkpoint it is no query's writer
    (repair's reload) and its upserts are not fenced."""

    def __init__(
        self, settings: Settings, checkpoint: str | None = None, target: SinkTarget | None = None
    ) -> None:
        self.settings = settings
        self.checkpoint = checkpoint
        self.target = SinkTarget.shipped(settings) if target is None else target
        self.table = self.target.table
        self.engine = database.engine(settings.database)
        self.table.create(self.engine)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        loaded_from = self.target.loaded_from
        columns = self.table.columns
        rows = (
            batch.select(
                *[F.col(f"d.{c}").alias(c) for c in columns if c not in loaded_from],
                *loaded_from,
                "dead_key",
                "dead_letter",
            )
            .toArrow()
            .to_pylist()
        )
        letters = [(r["dead_key"], r["dead_letter"]) for r in rows if r["dead_letter"]]
        valid = [{c: r[c] for c in columns} for r in rows if r["dead_letter"] is None]
        rejected = self.write(valid)
        letters += self._database_letters(batch, rejected)
        self._dead_letter(letters)
        failpoint("sink.after_write")  # written, offsets not yet committed: a replay follows

    def write(self, rows: list[dict]) -> dict[tuple[int, int], str]:
        """Upsert a batch's ``rows`` in key order, :data:`WRITE_ROWS` to a fenced
        transaction; return those the database refused (:meth:`upsert_isolating`)."""
        key = self.table.key
        ordered = sorted(self.table.latest_per_key(rows), key=lambda row: row[key])
        rejected: dict[tuple[int, int], str] = {}
        for start in range(0, len(ordered), WRITE_ROWS):
            rejected |= self.upsert_isolating(ordered[start : start + WRITE_ROWS])
        return rejected

    def upsert_isolating(self, rows: list[dict]) -> dict[tuple[int, int], str]:
        """Upsert ``rows``; return those the database refused (by position), with its error.

        The batch is tried in one transaction. If the database rejects data (DataError,
        IntegrityError: a value or constraint the checks above do not know), the rows are
        split in halves, each retried in its own transaction, down to the single rows that
        fail: k bad rows cost O(k log n) statements and every good row is written. Rows of
        halves that succeed are committed before the batch ends; the upsert is idempotent, so
        a replay after a crash rewrites them harmlessly. Any other error (the connection, the
        server) fails the batch, so Spark retries it."""
        rows = self.table.latest_per_key(rows)
        fence = (
            None
            if self.checkpoint is None
            else checkpoint_lease.fence(self.settings, self.checkpoint)
        )
        try:
            self.table.upsert(self.engine, rows, fence=fence)
        except (DataError, IntegrityError) as error:
            if len(rows) == 1:
                position = tuple(rows[0][column] for column in self.target.loaded_from)
                return {position: f"database rejected the row: {error.orig}"}
            half = len(rows) // 2
            return self.upsert_isolating(rows[:half]) | self.upsert_isolating(rows[half:])
        return {}

    def _database_letters(
        self, batch: DataFrame, rejected: dict[tuple[int, int], str]
    ) -> list[tuple[bytes | None, str]]:
        """Dead letters of the rows the database refused, built from their original bytes
        (read again from the batch: only these few rows need them)."""
        if not rejected:
            return []
        partition, offset = self.target.loaded_from
        position = F.concat_ws(":", partition, offset)
        wanted = [f"{p}:{o}" for p, o in rejected]
        originals = batch.where(position.isin(wanted)).select(
            F.col(partition).alias("partition"),
            F.col(offset).alias("offset"),
            "timestamp_ms",
            "key",
            "value",
        )
        prefix = dead_letters.DEFAULT_PREFIX_BYTES
        return [
            (
                None if row.key is None else bytes(row.key)[:prefix],
                dead_letters.envelope_json(
                    rejected[(row.partition, row.offset)],
                    self.target.joined,
                    row.partition,
                    row.offset,
                    row.timestamp_ms,
                    None if row.key is None else bytes(row.key),
                    None if row.value is None else bytes(row.value),
                    prefix,
                ),
            )
            for row in originals.collect()
        ]

    def _dead_letter(self, letters: list[tuple[bytes | None, str]]) -> None:
        if not letters:
            return
        errors = DeliveryErrors()
        producer = reliable_producer(self.settings, on_delivery=errors)
        for key, letter in letters:
            producer.produce(self.target.dead_letters, letter.encode(), key)
        if producer.flush(self.settings.connect_timeout_s * 3) or errors.count:
            raise BoardstreamError(
                f"dead-lettering {self.target.joined} records failed: {errors.first or 'timeout'} "
                f"(records: {', '.join(_named(letter) for _, letter in letters)[:2_000]})"
            )


def _named(letter: str) -> str:
    """Where a dead letter's record came from, for an error message."""
    fields = json.loads(letter)
    return f"{fields['source_topic']}[{fields['partition']}]@{fields['offset']}"


def require_dead_letters_fit(settings: Settings, dlq_topic: str) -> None:
    """Refuse to start if a dead letter could exceed the producer's or the DLQ's limit."""
    prefix = dead_letters.DEFAULT_PREFIX_BYTES
    require_fit(
        admin_client(settings),
        settings,
        librdkafka_producer_limit(client_config(settings)),
        {
            dlq_topic: (
                dead_letters.largest_dead_letter(prefix),
                f"a dead letter (keeping up to {prefix:,} bytes of a record)",
            )
        },
    )


def start_sink(
    spark: SparkSession,
    settings: Settings,
    config: SinkJobConfig,
    target: SinkTarget | None = None,
) -> StreamingQuery:
    """The sink query of ``target`` (the shipped pipeline's if None)."""
    target = SinkTarget.shipped(settings) if target is None else target
    require_dead_letters_fit(settings, target.dead_letters)
    checkpoint = config.checkpoint_dir(settings)
    # Another database on the same checkpoint would never receive the rows loaded before.
    loads_into = make_url(settings.database).render_as_string(hide_password=True)
    guard_checkpoint(
        CheckpointFiles(spark),
        checkpoint_uri(checkpoint),
        {"query": config.query_name, "source": target.joined, "database": loads_into},
    )
    raw = streaming.kafka_stream(spark, settings, [target.joined], config.max_offsets_per_trigger)
    writer = (
        detail_rows(raw, target)
        .writeStream.queryName(config.query_name)
        .foreachBatch(BatchWriter(settings, checkpoint, target))
        .option("checkpointLocation", str(checkpoint))
    )
    return streaming.with_trigger(writer, config.trigger, config.interval).start()
