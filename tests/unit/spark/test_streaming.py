"""What every streaming job shares (boardstream/spark/streaming.py), with fakes where the code
takes Spark objects as parameters (a session, a reader or writer, a query): the Kafka source's
options, triggers and output modes, the no-data-batch switch, the checkpoint guard before a
query starts, and ``run``'s SIGTERM handling and listener lifetime."""

from __future__ import annotations

import logging
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException

from boardstream.leases import Leases, leases
from boardstream.settings import Settings
from boardstream.spark import checkpoint_lease, streaming
from boardstream.spark.checkpoint_guard import CheckpointMismatchError, recorded_identity
from boardstream.spark.progress import ProgressListener


def settings(tmp_path: Path) -> Settings:
    return Settings(
        _env_file=None,
        var_dir=tmp_path / "var",
        checkpoint_root=None,
        bootstrap_servers="broker:9092",
        security_protocol="PLAINTEXT",
    )


class Recorder:
    """A builder (DataStreamReader or DataStreamWriter) that records each call and returns
    itself; ``load`` and ``start`` end the chain."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, *args, *([kwargs] if kwargs else [])))
            return f"{name}()" if name in ("load", "start") else self

        return call


@dataclass(frozen=True, kw_only=True)
class Config(streaming.QueryConfig):
    @property
    def query_name(self) -> str:
        return "my-query"


def test_triggers() -> None:
    assert streaming.TRIGGERS == ("available-now", "processing-time")
    assert streaming.REAL_TIME_TRIGGERS == ("available-now", "processing-time", "real-time")


def test_a_config_runs_available_now_every_second_by_default() -> None:
    config = Config()
    assert (config.trigger, config.interval, config.checkpoint) == (
        "available-now",
        "1 second",
        None,
    )


def test_the_checkpoint_defaults_to_the_query_name_under_the_root(tmp_path: Path) -> None:
    default = (tmp_path / "var" / "checkpoints" / "my-query").as_uri()
    assert Config().checkpoint_dir(settings(tmp_path)) == default
    chosen = tmp_path / "elsewhere"
    assert Config(checkpoint=chosen).checkpoint_dir(settings(tmp_path)) == chosen.as_uri()
    on_hdfs = "hdfs://nn:8020/c/join/"
    assert Config(checkpoint=on_hdfs).checkpoint_dir(settings(tmp_path)) == on_hdfs.rstrip("/")


def test_the_base_config_names_no_query() -> None:
    with pytest.raises(NotImplementedError):
        _ = streaming.QueryConfig().query_name


def test_config_fields_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        Config("processing-time")  # type: ignore[misc]


def test_the_kafka_source_reads_committed_records_from_the_start(tmp_path: Path) -> None:
    reader = Recorder()
    spark = SimpleNamespace(readStream=reader)
    source = streaming.kafka_stream(spark, settings(tmp_path), ["member", "board"], None)
    assert source == "load()"
    assert reader.calls == [
        ("format", "kafka"),
        (
            "options",
            {
                "kafka.bootstrap.servers": "broker:9092",
                "kafka.security.protocol": "PLAINTEXT",
                "kafka.fetch.max.wait.ms": "10",
            },
        ),
        ("option", "subscribe", "member,board"),
        ("option", "startingOffsets", "earliest"),
        ("option", "failOnDataLoss", "true"),
        ("option", "kafka.isolation.level", "read_committed"),
        ("option", "includeHeaders", "false"),
        ("load",),
    ]


@pytest.mark.parametrize(
    ("limit", "option"), [(500, [("option", "maxOffsetsPerTrigger", "500")]), (0, [])]
)
def test_max_offsets_per_trigger_is_set_only_when_given(
    tmp_path: Path, limit: int, option: list[tuple[str, ...]]
) -> None:
    reader = Recorder()
    streaming.kafka_stream(SimpleNamespace(readStream=reader), settings(tmp_path), ["t"], limit)
    assert reader.calls[-1 - len(option) : -1] == option
    assert len(reader.calls) == 8 + len(option)


@pytest.mark.parametrize(
    ("trigger", "enabled"),
    [("available-now", "false"), ("processing-time", "true"), ("real-time", "true")],
)
def test_no_data_batches_run_except_available_now(trigger: str, enabled: str) -> None:
    conf = Recorder()
    streaming.configure_no_data_batches(SimpleNamespace(conf=conf), trigger)
    assert conf.calls == [("set", "spark.sql.streaming.noDataMicroBatches.enabled", enabled)]


@pytest.mark.parametrize(
    ("trigger", "call"),
    [
        ("available-now", ("trigger", {"availableNow": True})),
        ("processing-time", ("trigger", {"processingTime": "5 seconds"})),
        ("real-time", ("trigger", {"realTime": "5 seconds"})),
    ],
)
def test_with_trigger(trigger: str, call: tuple[Any, ...]) -> None:
    writer = Recorder()
    assert streaming.with_trigger(writer, trigger, "5 seconds") is writer
    assert writer.calls == [call]


def test_an_unknown_trigger_is_refused_naming_the_known_ones() -> None:
    writer = Recorder()
    with pytest.raises(ValueError) as raised:
        streaming.with_trigger(writer, "once", "1 second")
    assert str(raised.value) == (
        "trigger must be one of available-now, processing-time, real-time, got 'once'"
    )
    assert writer.calls == []


@pytest.mark.parametrize(
    ("trigger", "mode"),
    [("available-now", "append"), ("processing-time", "append"), ("real-time", "update")],
)
def test_output_mode(trigger: str, mode: str) -> None:
    assert streaming.output_mode(trigger) == mode


def test_a_query_to_kafka_is_checkpointed_and_guarded(
    tmp_path: Path, spark: Any, checkpoint_files: Any
) -> None:
    writer = Recorder()
    checkpoint = tmp_path / "ckpt"
    query = streaming.start_to_kafka(
        SimpleNamespace(writeStream=writer, sparkSession=spark),
        settings(tmp_path),
        "q",
        checkpoint.as_uri(),
        "processing-time",
        "2 seconds",
        {"sources": ["member"]},
    )
    assert query == "start()"
    assert writer.calls == [
        ("queryName", "q"),
        ("format", "kafka"),
        (
            "options",
            {
                "kafka.bootstrap.servers": "broker:9092",
                "kafka.security.protocol": "PLAINTEXT",
                "kafka.acks": "all",
                "kafka.batch.size": "262144",
                "kafka.linger.ms": "5",
            },
        ),
        ("option", "checkpointLocation", checkpoint.as_uri()),
        ("outputMode", "append"),
        ("trigger", {"processingTime": "2 seconds"}),
        ("start",),
    ]
    assert recorded_identity(checkpoint_files, checkpoint.as_uri()) == {
        "query": "q",
        "sources": ["member"],
    }


def test_a_real_time_query_writes_in_update_mode(tmp_path: Path, spark: Any) -> None:
    writer = Recorder()
    streaming.start_to_kafka(
        SimpleNamespace(writeStream=writer, sparkSession=spark),
        settings(tmp_path),
        "q",
        (tmp_path / "ckpt").as_uri(),
        "real-time",
        "5 seconds",
        {},
    )
    assert ("outputMode", "update") in writer.calls
    assert ("trigger", {"realTime": "5 seconds"}) in writer.calls


def test_a_checkpoint_of_another_query_is_refused_before_the_writer_is_built(
    tmp_path: Path, spark: Any, checkpoint_files: Any
) -> None:
    checkpoint = (tmp_path / "ckpt").as_uri()
    first = SimpleNamespace(writeStream=Recorder(), sparkSession=spark)
    streaming.start_to_kafka(first, settings(tmp_path), "q", checkpoint, "available-now", "", {})
    second = Recorder()
    with pytest.raises(CheckpointMismatchError):
        streaming.start_to_kafka(
            SimpleNamespace(writeStream=second, sparkSession=spark),
            settings(tmp_path),
            "other",
            checkpoint,
            "available-now",
            "",
            {},
        )
    assert second.calls == []
    assert recorded_identity(checkpoint_files, checkpoint) == {"query": "q"}


class FakeStreams:
    def __init__(self) -> None:
        self.added: list[Any] = []
        self.removed: list[Any] = []

    def addListener(self, listener: Any) -> None:
        self.added.append(listener)

    def removeListener(self, listener: Any) -> None:
        self.removed.append(listener)


class FakeQuery:
    """Delivers SIGTERM to the handler ``run`` installed during its first wait (or raises
    ``fails``), and ends only once stopped, as Spark's query does."""

    def __init__(self, streams: FakeStreams, fails: Exception | None = None) -> None:
        self.streams = streams
        self.fails = fails
        self.stops = 0
        self.waits: list[float] = []
        self.runId = "run-1"
        self.name = "board_detail_join"
        self.lastProgress: dict[str, Any] | None = None

    def stop(self) -> None:
        self.stops += 1
        # The listener has seen the last batch (as Spark's event would have told it).
        self.lastProgress = {"batchId": 4}
        self.streams.added[0].last_batch[str(self.runId)] = 4

    def awaitTermination(self, timeout: float) -> bool:
        assert self.streams.added and not self.streams.removed, "listening while running"
        assert self.stops <= 1, "stopped again after it ended"
        if self.fails is not None:
            raise self.fails
        self.waits.append(timeout)
        if len(self.waits) == 1:
            handler = signal.getsignal(signal.SIGTERM)
            assert callable(handler)
            handler(signal.SIGTERM, None)
            assert self.stops == 0, "the handler must not call into the query itself"
        return self.stops > 0


class CancelledByStop(StreamingQueryException):
    """Spark's failure of a batch whose foreachBatch job the stop cancelled, without a JVM."""

    def __init__(self) -> None:
        Exception.__init__(self, "[STREAM_FAILED] ... [FOREACH_BATCH_USER_FUNCTION_ERROR]")

    def __str__(self) -> str:
        return str(self.args[0])


class StoppedMidBatch(FakeQuery):
    """Its stop cancels the batch under way, and the query ends with the batch's failure."""

    def awaitTermination(self, timeout: float) -> bool:
        if self.stops:
            raise CancelledByStop()
        return super().awaitTermination(timeout)


def fake_spark(streams: FakeStreams) -> Any:
    """A session with its streams and py4j's callback parameters."""
    gateway = SimpleNamespace(python_parameters=SimpleNamespace(propagate_java_exceptions=False))
    context = SimpleNamespace(
        _gateway=gateway, applicationId="app-1", master="local[1]", uiWebUrl=None
    )
    conf: dict[str, str] = {}
    return SimpleNamespace(
        streams=streams,
        sparkContext=context,
        conf=SimpleNamespace(set=conf.__setitem__),
        conf_values=conf,
    )


@pytest.fixture
def sigterm() -> Any:
    """A recognizable SIGTERM handler in place during the test, the original after it."""

    def previous(*_: Any) -> None:
        raise AssertionError("the job's handler should have been called")

    original = signal.signal(signal.SIGTERM, previous)
    yield previous
    signal.signal(signal.SIGTERM, original)


def test_run_stops_the_query_on_sigterm_and_restores_the_handler(
    tmp_path: Path, sigterm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    quieted: list[Any] = []
    # The JVM's logging, quieted for the stop (tests/integration/test_join_real_time.py).
    monkeypatch.setattr(streaming, "quiet_jvm_logging", quieted.append)
    streams = FakeStreams()
    query = FakeQuery(streams)
    config = settings(tmp_path)
    spark = fake_spark(streams)
    assert streaming.run(spark, config, lambda: query) is query
    assert query.stops == 1
    assert quieted == [spark]
    assert spark.sparkContext._gateway.python_parameters.propagate_java_exceptions is True
    assert query.waits == [streaming.STOP_POLL_S] * 2
    assert signal.getsignal(signal.SIGTERM) is sigterm
    (listener,) = streams.added
    assert isinstance(listener, ProgressListener)
    assert str(listener.store.engine.url) == config.database
    assert streams.removed == [listener]


def test_a_query_that_fails_once_a_stop_is_requested_has_stopped(
    tmp_path: Path, sigterm: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    """Spark takes a foreachBatch job the stop cancelled for a failed batch (#48): the stop."""
    monkeypatch.setattr(streaming, "quiet_jvm_logging", lambda spark: None)
    streams = FakeStreams()
    query = StoppedMidBatch(streams)
    with caplog.at_level(logging.INFO, logger=streaming.logger.name):
        assert streaming.run(fake_spark(streams), settings(tmp_path), lambda: query) is query
    assert query.stops == 1 and streams.removed == streams.added
    assert caplog.messages[-1] == (
        "board_detail_join stopped mid-batch: "
        "[STREAM_FAILED] ... [FOREACH_BATCH_USER_FUNCTION_ERROR]"
    )


def test_run_cleans_up_when_the_query_fails(tmp_path: Path, sigterm: Any) -> None:
    streams = FakeStreams()
    query = FakeQuery(streams, fails=RuntimeError("query failed"))
    with pytest.raises(RuntimeError, match=r"^query failed$"):
        streaming.run(fake_spark(streams), settings(tmp_path), lambda: query)
    assert signal.getsignal(signal.SIGTERM) is sigterm
    assert streams.removed == streams.added
    assert query.stops == 0


class LateWorker(StreamingQueryException):
    """Spark's failure when a Python worker did not connect back in time, without a JVM."""

    def __init__(self) -> None:
        Exception.__init__(self, "[STREAM_FAILED] ... Python worker failed to connect back.")

    def __str__(self) -> str:
        return str(self.args[0])


def test_run_restarts_a_query_whose_python_worker_connected_late(
    tmp_path: Path, sigterm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streaming, "LATE_WORKER_PAUSE_S", 0.0)
    monkeypatch.setattr(streaming, "quiet_jvm_logging", lambda spark: None)
    streams = FakeStreams()
    queries = [FakeQuery(streams, fails=LateWorker()), FakeQuery(streams)]
    started = iter(queries)
    spark = fake_spark(streams)
    assert streaming.run(spark, settings(tmp_path), lambda: next(started)) is queries[1]
    assert queries[1].stops == 1
    assert streams.removed == streams.added


def test_run_gives_up_on_late_workers_after_its_restarts(
    tmp_path: Path, sigterm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streaming, "LATE_WORKER_PAUSE_S", 0.0)
    streams = FakeStreams()
    starts: list[FakeQuery] = []

    def start() -> FakeQuery:
        starts.append(FakeQuery(streams, fails=LateWorker()))
        return starts[-1]

    with pytest.raises(LateWorker):
        streaming.run(fake_spark(streams), settings(tmp_path), start)
    assert len(starts) == 1 + streaming.LATE_WORKER_RESTARTS


class LeaseTakenAway(FakeQuery):
    """Its checkpoint's lease is taken by another driver during its first wait (as one would
    after this driver was cut off for longer than the TTL); it runs until stopped."""

    def __init__(self, streams: FakeStreams, settings: Settings, checkpoint: Path) -> None:
        super().__init__(streams)
        self.settings, self.checkpoint = settings, checkpoint

    def awaitTermination(self, timeout: float) -> bool:
        if not self.waits:
            name = checkpoint_lease.lease_name(self.checkpoint)
            with Leases.of(self.settings).engine.begin() as connection:  # its TTL ran out
                connection.execute(leases.update().values(expires_at_ms=0))
            assert Leases.of(self.settings).try_take(name, THIEF) is not None
        self.waits.append(timeout)
        assert len(self.waits) < 100, "still running 10 s after its lease was taken"
        time.sleep(0.1)
        return self.stops > 0


THIEF = {"pid": 7, "host": "elsewhere", "job": "board-detail-join", "since_ms": 1}


class AskedToStop(FakeQuery):
    """Someone asks its driver, through the checkpoint's lease, to stop during its first wait
    (the supervisor, from another host); it runs until stopped."""

    def __init__(self, streams: FakeStreams, settings: Settings, checkpoint: Path) -> None:
        super().__init__(streams)
        self.settings, self.checkpoint = settings, checkpoint

    def awaitTermination(self, timeout: float) -> bool:
        if not self.waits:
            assert checkpoint_lease.ask_to_stop(self.settings, self.checkpoint)
        self.waits.append(timeout)
        assert len(self.waits) < 100, "still running 10 s after it was asked to stop"
        time.sleep(0.1)
        return self.stops > 0


def test_a_driver_asked_through_its_lease_stops_its_query_and_lets_the_lease_go(
    tmp_path: Path, sigterm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streaming, "quiet_jvm_logging", lambda spark: None)
    config = settings(tmp_path).model_copy(update={"lease_ttl_s": 1.5})
    checkpoint = tmp_path / "ckpt"
    streams = FakeStreams()
    query = AskedToStop(streams, config, checkpoint)
    assert streaming.run(fake_spark(streams), config, lambda: query, Config(checkpoint=checkpoint))
    assert query.stops == 1 and streams.removed == streams.added
    assert len(query.waits) <= 1.5 / 3 / 0.1 + 2  # learnt at its next renewal
    assert checkpoint_lease.holder(config, checkpoint) is None


def test_a_driver_that_lost_its_checkpoints_lease_stops_its_query_and_fails(
    tmp_path: Path, sigterm: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    monkeypatch.setattr(streaming, "quiet_jvm_logging", lambda spark: None)
    config = settings(tmp_path).model_copy(update={"lease_ttl_s": 1.0})
    checkpoint = tmp_path / "ckpt"
    streams = FakeStreams()
    query = LeaseTakenAway(streams, config, checkpoint)
    spark = fake_spark(streams)
    with pytest.raises(streaming.CheckpointLeaseLostError, match="lease was lost"):
        streaming.run(spark, config, lambda: query, Config(checkpoint=checkpoint))
    assert query.stops == 1 and streams.removed == streams.added
    # Stopped in time for the TTL: given up at 2/3 of it, stopped within 1/6 more.
    assert spark.conf_values == {"spark.sql.streaming.stopTimeout": "166ms"}
    assert "board_detail_join lost its checkpoint's lease: stopping it within" in caplog.text
    thief = checkpoint_lease.holder(config, checkpoint)  # its release left the new holder's
    assert thief is not None and thief.host == "elsewhere"
