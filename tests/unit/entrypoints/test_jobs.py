"""The Spark jobs' command lines: every flag reaches the job's config under its own field (flag
dests are the config's field names; a renamed flag that fell back to a default would show
here), and bad flags fail before any Spark starts, naming the problem (exit 2); a query stopped
mid-batch ends its job cleanly, a failed one raises."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from boardstream.aggregations.event_time import SessionSpec, WindowSpec
from boardstream.aggregations.event_time_job import EventTimeConfig
from boardstream.aggregations.source import SourceOptions
from boardstream.aggregations.table_count import TableCountConfig
from boardstream.entrypoints import jobs
from boardstream.joins.job import JoinJobConfig
from boardstream.joins.member_table import JoinOptions
from boardstream.joins.topics import Deployed
from boardstream.pipelines import shipped
from boardstream.sink.job import SinkJobConfig

QUERY = ["--trigger", "processing-time", "--interval", "5 seconds", "--checkpoint", "/tmp/cp"]


@pytest.fixture
def started(monkeypatch) -> list[object]:
    """The config each main hands its domain's start (no Spark: the seam is the start call)."""
    configs: list[object] = []

    def capture(_spark, _settings, config, *deployed):
        configs.append(config)
        if deployed and deployed[0] is not None:
            configs.append(deployed[0])

    def run_job(name, config, start) -> int:
        start(None, None)
        assert config in configs, "the checkpoint leased is the one the job runs on"
        if isinstance(config, JoinJobConfig | SinkJobConfig):  # a pipeline's: its query's name
            assert name == config.query_name
        return 0

    monkeypatch.setattr(jobs, "run_job", run_job)
    monkeypatch.setattr(jobs.joins, "start", capture)
    monkeypatch.setattr(jobs.sink, "start", capture)
    monkeypatch.setattr(jobs, "start_table_count", capture)
    monkeypatch.setattr(jobs, "start_event_time_count", capture)
    return configs


def test_join_flags(started) -> None:
    argv = [
        *QUERY,
        "--join-mode=as-of",
        "--unmatched-timeout=2m",
        "--history-retention=3d",
        "--deleted-retention=1h",
        "--max-pending-per-member=7",
        "--max-record-bytes=1000",
        "--max-offsets-per-trigger=500",
        "--state-buckets=16",
    ]
    assert jobs.join_main(argv) == 0
    assert started == [
        JoinJobConfig(
            options=JoinOptions(
                mode="as-of",
                unmatched_timeout_ms=120_000,
                max_pending_per_member=7,
                history_retention_ms=3 * 86_400_000,
                deleted_retention_ms=3_600_000,
            ),
            trigger="processing-time",
            interval="5 seconds",
            max_record_bytes=1000,
            max_offsets_per_trigger=500,
            checkpoint="/tmp/cp",
            state_buckets=16,
        )
    ]


def test_join_defaults(started) -> None:
    assert jobs.join_main([]) == 0
    assert started == [JoinJobConfig()]


def test_a_declared_pipeline_runs_on_its_topics_with_its_join_settings(started) -> None:
    """--pipeline orders: its declared topics, its query and checkpoint named after it, its
    join (as-of, 2 minutes' grace, 1,000 per key) unless a flag says otherwise."""
    orders = shipped("orders")
    assert jobs.join_main(["--pipeline", "orders", "--unmatched-timeout=5m"]) == 0
    assert jobs.sink_main(["--pipeline", "orders"]) == 0
    join, deployed, sink_config, target = started
    assert join == JoinJobConfig(
        options=JoinOptions.of(orders.join, unmatched_timeout_ms=300_000), query="orders-join"
    )
    assert join.options.mode == "as-of" and join.options.max_pending_per_member == 1_000
    assert deployed == Deployed.declared(orders)
    assert deployed.topics.joined == "orders-joined"
    assert sink_config == SinkJobConfig(query="orders-sink")
    assert (target.pipeline, target.topics) == (orders, deployed.topics)
    assert target.table.table.name == "order_customer"


def test_a_pipeline_not_declared_is_refused_naming_the_declared_ones(
    started, capsys: pytest.CaptureFixture[str]
) -> None:
    for main in (jobs.join_main, jobs.sink_main):
        with pytest.raises(SystemExit) as refused:
            main(["--pipeline", "nope"])
        assert refused.value.code == 2
        assert "--pipeline nope: no pipeline 'nope'; declared: board_detail, orders" in (
            capsys.readouterr().err
        )
    assert started == []


def test_sink_flags(started) -> None:
    assert jobs.sink_main([*QUERY, "--max-offsets-per-trigger=9"]) == 0
    assert started == [
        SinkJobConfig(
            trigger="processing-time",
            interval="5 seconds",
            max_offsets_per_trigger=9,
            checkpoint="/tmp/cp",
        )
    ]


def test_table_count_flags(started) -> None:
    argv = [
        *QUERY,
        "--source-topic=board",
        "--output-topic=counts",
        "--value-field=member_id",
        "--time-field=ts",
        "--dlq-topic=bad",
        "--order=event-time",
        "--state-ttl=1d",
        "--max-offsets-per-trigger=3",
    ]
    assert jobs.table_count_main(argv) == 0
    source = SourceOptions("board", "member_id", "ts", max_offsets_per_trigger=3)
    assert started == [
        TableCountConfig(
            source,
            "counts",
            "event-time",
            "bad",
            86_400_000,
            trigger="processing-time",
            interval="5 seconds",
            checkpoint="/tmp/cp",
        )
    ]


def test_window_and_session_flags(started) -> None:
    topics = ["--source-topic=board", "--output-topic=out"]
    assert jobs.window_main([*topics, "--size=1m", "--grace=10s", "--emit=updates"]) == 0
    assert jobs.session_main([*topics, "--gap=30m", "--group-by=key", "--retention=2d"]) == 0
    source = SourceOptions("board")
    assert started == [
        EventTimeConfig(
            "window-count", source, "out", WindowSpec(60_000, 10_000, 86_400_000, "updates")
        ),
        EventTimeConfig(
            "session-count", source, "out", SessionSpec(1_800_000, 0, 172_800_000), group_by="key"
        ),
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--join-mode", "newest"], "invalid choice: 'newest'"),
        (["--unmatched-timeout", "soon"], "expected a duration like 500ms"),
        (["--state-buckets", "0"], "argument --state-buckets: must be > 0, got 0"),
        (
            ["--max-pending-per-member", "-1"],
            "argument --max-pending-per-member: must be > 0, got -1",
        ),
        (["--trigger", "once"], "invalid choice: 'once'"),
    ],
)
def test_join_arguments(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        jobs.join_main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_sink_arguments(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        jobs.sink_main(["--max-offsets-per-trigger", "many"])
    assert exit_info.value.code == 2
    assert "expected a whole number, got 'many'" in capsys.readouterr().err


TOPICS = ["--source-topic", "board", "--output-topic", "out"]


@pytest.mark.parametrize(
    ("main", "args", "message"),
    [
        (jobs.window_main, ["--size=-5s"], "expected a duration like 500ms"),
        (jobs.window_main, ["--size", "0s"], "must be > 0"),
        (
            jobs.window_main,
            ["--size", "1m", "--grace", "30s", "--retention", "1m"],
            "--retention (60000 ms) must be at least --size + --grace (90000 ms)",
        ),
        (jobs.window_main, ["--size", "1m", "--emit", "sometimes"], "invalid choice: 'sometimes'"),
        (
            jobs.session_main,
            ["--gap", "1m", "--retention", "30s"],
            "must be at least --gap + --grace",
        ),
        (jobs.session_main, ["--gap", "1m", "--group-by", "city"], "invalid choice: 'city'"),
        (jobs.table_count_main, ["--value-field", "member id"], "not a field name"),
        (jobs.table_count_main, ["--order", "random"], "invalid choice: 'random'"),
    ],
)
def test_bad_flags_exit_2_naming_the_problem(main, args, message, capsys, monkeypatch) -> None:
    monkeypatch.setattr(jobs, "run_job", lambda *_: pytest.fail("Spark was started"))
    with pytest.raises(SystemExit) as exit_:
        main([*TOPICS, *args])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_good_flags_reach_the_job(monkeypatch) -> None:
    """The same seam, so the test above can fail: valid flags do start the job."""
    started = []
    monkeypatch.setattr(jobs, "run_job", lambda name, _config, start: started.append(name) or 0)
    assert jobs.window_main([*TOPICS, "--size", "1m", "--grace", "30s", "--retention", "2m"]) == 0
    assert started == ["window-count"]


def test_the_real_time_trigger_is_the_joins_alone(started, capsys) -> None:
    argv = ["--trigger", "real-time", "--interval", "30 seconds"]
    assert jobs.join_main(argv) == 0
    assert started == [JoinJobConfig(trigger="real-time", interval="30 seconds")]
    with pytest.raises(SystemExit) as python:
        jobs.join_main([*argv, "--engine", "python"])
    assert python.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "board_detail_join: error: --trigger real-time runs --engine jvm only: Spark's "
        "real-time mode does not run the Python transformWithState"
    )
    with pytest.raises(SystemExit) as short:
        jobs.join_main(["--trigger", "real-time", "--interval", "1 second"])
    assert short.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "board_detail_join: error: a real-time checkpoint --interval is at least 5 seconds, "
        "got '1 second'"
    )
    with pytest.raises(SystemExit) as sink:
        jobs.sink_main(argv)  # foreachBatch is not in Spark's real-time allowlist
    assert sink.value.code == 2
    assert "argument --trigger: invalid choice: 'real-time'" in capsys.readouterr().err


class Failed(Exception):
    """A query's failure, as :func:`streaming.run` raises it."""


@pytest.fixture
def no_spark(monkeypatch) -> None:
    """run_job up to :func:`streaming.run`, without settings checks or a session."""
    spark = SimpleNamespace(sparkContext=SimpleNamespace(setLogLevel=lambda level: None))
    monkeypatch.setattr(jobs, "configure", lambda verbose: None)
    monkeypatch.setattr(jobs, "Settings", lambda: None)
    monkeypatch.setattr(jobs, "require", lambda settings, name: None)
    monkeypatch.setattr(jobs, "spark_session", lambda settings, name: spark)


def test_a_query_stopped_mid_batch_ends_its_job_cleanly(no_spark, monkeypatch, caplog) -> None:
    """Spark keeps the batch its stop cancelled as the query's exception (#48): no failure."""
    stopped = SimpleNamespace(exception=lambda: "[STREAM_FAILED] ... foreach batch sink")
    asked: list[dict] = []
    monkeypatch.setattr(jobs.streaming, "run", lambda *_, **kw: asked.append(kw) or stopped)
    with caplog.at_level(logging.INFO):
        assert jobs.run_job("board-detail-sink", SinkJobConfig(), lambda *_: stopped) == 0
    assert [record for record in caplog.records if record.levelno >= logging.ERROR] == []
    assert asked == [{"exit_when_lost": True}]  # the job's process is the driver: self-fencing


def test_a_failed_query_raises_out_of_its_job(no_spark, monkeypatch) -> None:
    def failing(*_: object, **__: object) -> None:
        raise Failed("[STREAM_FAILED] the database refused")

    monkeypatch.setattr(jobs.streaming, "run", failing)
    with pytest.raises(Failed):
        jobs.run_job("board-detail-sink", SinkJobConfig(), lambda *_: None)
