"""`boardstream topics create` through the real command against a real broker: any topic with its
partitions and configs, the platform's topics without --topic, and one-line errors."""

from __future__ import annotations

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
