"""`boardstream topics create` through the real command against a real broker: any topic with its
partitions and configs, the platform's topics without --topic, and one-line errors."""

from __future__ import annotations

from confluent_kafka import Producer
from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

from boardstream.kafka.clients import admin_client
from boardstream.settings import Settings
from tests.fixtures import cli


def topic_state(settings: Settings, topic: str) -> tuple[int, dict[str, str]]:
    """Partitions and the configs set on the topic itself, as the broker reports them."""
    admin = admin_client(settings)
    partitions = len(admin.list_topics(topic, timeout=10).topics[topic].partitions)
    (future,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    topic_level = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    own = {n: e.value for n, e in future.result().items() if e.source == topic_level}
    return partitions, own


def test_creates_any_topic_with_partitions_and_configs(kafka: Settings) -> None:
    args = ["topics", "create", "--topic", "cli-orders", "--partitions", "6"]
    args += ["--config", "cleanup.policy=compact", "--config", "retention.ms=3600000"]
    first = cli(kafka, *args)
    assert (first.returncode, first.stderr) == (0, "")
    assert first.stdout == "cli-orders: created (6 partitions, compact, retention.ms=3600000)\n"
    partitions, configs = topic_state(kafka, "cli-orders")
    assert partitions == 6
    assert configs == {"cleanup.policy": "compact", "retention.ms": "3600000"}
    again = cli(kafka, *args)
    assert (again.returncode, again.stdout) == (
        0,
        "cli-orders: exists (6 partitions, compact, retention.ms=3600000)\n",
    )


def test_without_topic_creates_the_platform_topics(kafka: Settings) -> None:
    names = {
        "BOARDSTREAM_MEMBER_TOPIC": "clip-member",
        "BOARDSTREAM_BOARD_TOPIC": "clip-board",
        "BOARDSTREAM_BOARD_DETAIL_TOPIC": "clip-board-detail",
        "BOARDSTREAM_UNMATCHED_TOPIC": "clip-board-unmatched",
        "BOARDSTREAM_DLQ_TOPIC": "clip-board-dlq",
        "BOARDSTREAM_PARTITIONS": "2",
    }
    result = cli(kafka, "topics", "create", extra_env=names)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == (
        "clip-member: created (2 partitions, compact)\n"
        "clip-board: created (2 partitions, delete)\n"
        "clip-board-detail: created (2 partitions, delete)\n"
        "clip-board-unmatched: created (2 partitions, delete)\n"
        "clip-board-dlq: created (2 partitions, delete)\n"
        "clip-board-join-tick: created (1 partitions, delete, retention.ms=86400000)\n"
    )
    assert topic_state(kafka, "clip-member") == (2, {"cleanup.policy": "compact"})


def test_bad_input_is_one_line_naming_the_problem(kafka: Settings) -> None:
    cases = [
        (
            ["--topic", "cli-bad", "--config", "retention"],
            2,
            "boardstream topics: error: argument --config: expected KEY=VALUE, got 'retention' "
            "(see boardstream topics --help)\n",
        ),
        (
            ["--topic", "cli-bad", "--config", "=5"],
            2,
            "boardstream topics: error: argument --config: expected KEY=VALUE, got '=5' "
            "(see boardstream topics --help)\n",
        ),
        (
            ["--topic", "cli-bad", "--partitions", "0"],
            2,
            "boardstream topics: error: argument --partitions: must be > 0, got 0 "
            "(see boardstream topics --help)\n",
        ),
        (
            ["--topic", "cli-bad", "--partitions", "-3"],
            2,
            "boardstream topics: error: argument --partitions: must be > 0, got -3 "
            "(see boardstream topics --help)\n",
        ),
        (
            ["--partitions", "4"],
            1,
            "boardstream: error: --partitions and --config need `topics create --topic NAME`\n",
        ),
        (
            ["--topic", "cli-bad", "--config", "retention.ms=1", "--config", "retention.ms=2"],
            1,
            "boardstream: error: --config retention.ms given twice\n",
        ),
    ]
    for args, code, stderr in cases:
        result = cli(kafka, "topics", "create", *args)
        assert (result.returncode, result.stdout, result.stderr) == (code, "", stderr), args
    assert "cli-bad" not in admin_client(kafka).list_topics(timeout=10).topics


def test_a_config_the_broker_refuses_is_one_line(kafka: Settings) -> None:
    args = ["--topic", "cli-refused", "--config", "cleanup.policy=x"]
    result = cli(kafka, "topics", "create", *args)
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        "boardstream: error: creating topic cli-refused failed: KafkaError{code=INVALID_CONFIG,"
        'val=40,str="Invalid value x for configuration cleanup.policy: String must be one of: '
        'compact, delete"}\n',
    )


def test_describe_prints_partitions_offsets_and_set_configs(kafka: Settings) -> None:
    """`topics describe [--topic board] [--all-configs]`: without --topic the platform's topics;
    each with its partitions' offsets and the configs set on it (--all-configs: the defaults
    too, marked)."""
    names = {
        "BOARDSTREAM_MEMBER_TOPIC": "cld-member",
        "BOARDSTREAM_BOARD_TOPIC": "cld-board",
        "BOARDSTREAM_BOARD_DETAIL_TOPIC": "cld-board-detail",
        "BOARDSTREAM_UNMATCHED_TOPIC": "cld-board-unmatched",
        "BOARDSTREAM_DLQ_TOPIC": "cld-board-dlq",
        "BOARDSTREAM_PARTITIONS": "2",
    }
    created = cli(kafka, "topics", "create", extra_env=names)
    assert created.returncode == 0, created.stderr
    producer = Producer({**kafka.to_confluent(), "acks": "all"})
    for partition, count in ((0, 3), (1, 1)):
        for number in range(count):
            producer.produce(
                "cld-board", key=f"b{number}".encode(), value=b"{}", partition=partition
            )
    assert producer.flush(10) == 0

    board = cli(kafka, "topics", "describe", "--topic", "cld-board", extra_env=names)
    assert (board.returncode, board.stderr) == (0, "")
    assert board.stdout == (
        "cld-board: 2 partitions, end offsets 4\n"
        "  partition 0: offsets 0..3\n"
        "  partition 1: offsets 0..1\n"
        "  cleanup.policy=delete\n"
    )

    everything = cli(kafka, "topics", "describe", "--all-configs", extra_env=names)
    assert (everything.returncode, everything.stderr) == (0, "")
    headers = [line for line in everything.stdout.splitlines() if not line.startswith("  ")]
    assert headers == [
        "cld-member: 2 partitions, end offsets 0",
        "cld-board: 2 partitions, end offsets 4",
        "cld-board-detail: 2 partitions, end offsets 0",
        "cld-board-unmatched: 2 partitions, end offsets 0",
        "cld-board-dlq: 2 partitions, end offsets 0",
        "cld-board-join-tick: 1 partitions, end offsets 0",
    ]
    configs = everything.stdout.split("cld-board: ")[1].split("\ncld-board-detail: ")[0]
    assert "\n  cleanup.policy=delete\n" in configs
    assert "\n  segment.bytes=1073741824 (default)\n" in configs
