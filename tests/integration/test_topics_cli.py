"""`boardstream topics create` through the real command against a real broker: any topic with its
partitions and configs, the platform's topics without --topic, and one-line errors."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from boardstream.kafka.clients import admin_client
from boardstream.kafka.retention import expiry_risks, output_retention_ms
from boardstream.settings import Settings
from tests.fixtures import cli
from tests.pipeline import alter_topics
from tests.unit.pipelines.declarations import changed, write


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
    names = prefixed("clip")
    result = cli(kafka, "topics", "create", extra_env=names)
    assert (result.returncode, result.stderr) == (0, "")
    kept = "retention.bytes=-1, retention.ms=604800000"
    assert result.stdout == (
        "clip-member: created (2 partitions, compact)\n"
        f"clip-board: created (2 partitions, delete, {kept})\n"
        f"clip-board-detail: created (2 partitions, delete, {kept})\n"
        f"clip-board-unmatched: created (2 partitions, delete, {kept})\n"
        f"clip-board-dlq: created (2 partitions, delete, {kept})\n"
        "clip-board-join-tick: created (1 partitions, delete, retention.ms=86400000)\n"
    )
    assert topic_state(kafka, "clip-member") == (2, {"cleanup.policy": "compact"})
    # Retention set on each stream itself, not left to the broker's defaults.
    stream = {"cleanup.policy": "delete", "retention.ms": "604800000", "retention.bytes": "-1"}
    for name in ("clip-board", "clip-board-detail", "clip-board-unmatched", "clip-board-dlq"):
        assert topic_state(kafka, name) == (2, stream), name


@pytest.mark.parametrize(
    ("board_ms", "setting_ms", "output_ms"),
    [
        ("-1", "86400000", "-1"),  # production's board keeps forever: so do the outputs
        ("2592000000", "86400000", "2592000000"),  # 30 days, longer than the setting's day
        ("3600000", "86400000", "86400000"),  # never less than the setting
    ],
)
def test_outputs_keep_at_least_what_an_existing_board_keeps(
    kafka: Settings, board_ms: str, setting_ms: str, output_ms: str
) -> None:
    prefix = f"clr{board_ms.lstrip('-')}"
    board = cli(
        kafka,
        "topics",
        "create",
        "--topic",
        f"{prefix}-board",
        "--config",
        f"retention.ms={board_ms}",
    )
    assert board.returncode == 0, board.stderr
    names = {**prefixed(prefix), "BOARDSTREAM_TOPIC_RETENTION_MS": setting_ms}
    result = cli(kafka, "topics", "create", extra_env=names)
    assert (result.returncode, result.stderr) == (0, "")  # nothing expires before board
    assert f"{prefix}-board: exists (" in result.stdout
    assert topic_state(kafka, f"{prefix}-board")[1] == {"retention.ms": board_ms}
    for output in ("board-detail", "board-unmatched", "board-dlq"):
        assert topic_state(kafka, f"{prefix}-{output}")[1] == {
            "cleanup.policy": "delete",
            "retention.ms": output_ms,
            "retention.bytes": "-1",
        }


def test_create_and_describe_warn_when_an_output_may_expire_before_board(kafka: Settings) -> None:
    """Outputs set to keep less than board, by age, by size or by compaction, as an operator
    might: each named once, as a WARNING and (describe) under its topic; healthy ones never."""
    names = prefixed("clx")
    assert cli(kafka, "topics", "create", extra_env=names).returncode == 0
    healthy = cli(kafka, "topics", "describe", extra_env=names)
    assert (healthy.returncode, healthy.stderr) == (0, "")
    assert "EXPIRY RISK" not in healthy.stdout

    settings = kafka.with_topic_prefix("clx")
    admin = admin_client(settings)
    assert output_retention_ms(admin, settings) == 604_800_000
    alter(
        settings,
        {
            "clx-board-detail": {"retention.ms": "3600000"},
            "clx-board-unmatched": {"cleanup.policy": "compact,delete"},
            "clx-board-dlq": {"retention.bytes": "1048576", "retention.ms": "-1"},
        },
    )
    risks = [
        "clx-board-detail may expire before clx-board: retention.ms=3600000 (1h00m) is shorter "
        "than its 604800000 (168h00m)",
        "clx-board-unmatched may expire before clx-board: cleanup.policy=compact,delete compacts "
        "away a board's older records, whose sources it still holds",
        "clx-board-dlq may expire before clx-board: retention.bytes=1048576 deletes by size, not "
        "age (set -1: no size limit)",
    ]
    warnings = "".join(f"WARNING boardstream.kafka.retention: {risk}\n" for risk in risks)
    described = cli(kafka, "topics", "describe", extra_env=names)
    assert (described.returncode, described.stderr) == (0, warnings)
    for risk in risks:
        topic = risk.split(" ", 1)[0]
        section = described.stdout.split(f"{topic}: ", 1)[1].split("\nclx-", 1)[0]
        assert section.endswith(f"\n  EXPIRY RISK: {risk}"), section
        assert described.stdout.count(risk) == 1
    again = cli(kafka, "topics", "create", extra_env=names)
    assert (again.returncode, again.stderr) == (0, warnings)  # left as they are, but said
    board = cli(kafka, "topics", "describe", "--topic", "clx-board", extra_env=names)
    assert (board.stderr, "EXPIRY RISK" in board.stdout) == (warnings, False)
    member = cli(kafka, "topics", "describe", "--topic", "clx-member", extra_env=names)
    assert (member.returncode, member.stderr) == (0, "")  # not involved
    assert output_retention_ms(admin, settings) == 3_600_000
    assert [str(risk) for risk in expiry_risks(admin, settings)] == risks


def prefixed(prefix: str) -> dict[str, str]:
    """The environment naming the platform's topics ``<prefix>-member``, ..., 2 partitions."""
    return {
        "BOARDSTREAM_MEMBER_TOPIC": f"{prefix}-member",
        "BOARDSTREAM_BOARD_TOPIC": f"{prefix}-board",
        "BOARDSTREAM_BOARD_DETAIL_TOPIC": f"{prefix}-board-detail",
        "BOARDSTREAM_UNMATCHED_TOPIC": f"{prefix}-board-unmatched",
        "BOARDSTREAM_DLQ_TOPIC": f"{prefix}-board-dlq",
        "BOARDSTREAM_PARTITIONS": "2",
    }


def alter(settings: Settings, changes: dict[str, dict[str, str]]) -> None:
    """Set configs on topics, then wait until the broker reports them."""
    alter_topics(settings, changes)
    deadline = time.monotonic() + 10
    while not all(
        configs.items() <= topic_state(settings, topic)[1].items()
        for topic, configs in changes.items()
    ):
        assert time.monotonic() < deadline, "the broker never reported the new configs"
        time.sleep(0.1)


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
    names = prefixed("cld")
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
        "  retention.bytes=-1\n"
        "  retention.ms=604800000\n"
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


def test_a_declared_pipelines_topics_as_its_declaration_names_them(
    kafka: Settings, tmp_path
) -> None:
    """`topics create --pipeline NAME`: the declared pipeline's six topics, its table topic
    compacted, its outputs kept as long as its own stream; `topics describe --pipeline NAME`
    warns of its outputs only, against its own stream; a name not declared is one line."""
    data = changed({"name": "tp_orders", "stream.topic": "tp-orders", "table.topic": "tp-cust"})
    write(tmp_path, "tp_orders.yml", data)
    env = {"BOARDSTREAM_PIPELINES_DIR": str(tmp_path), "BOARDSTREAM_PARTITIONS": "2"}
    made = cli(kafka, "topics", "create", "--pipeline", "tp_orders", extra_env=env)
    assert (made.returncode, made.stderr) == (0, "")
    kept = "retention.bytes=-1, retention.ms=604800000"
    assert made.stdout == (
        "tp-cust: created (2 partitions, compact)\n"
        f"tp-orders: created (2 partitions, delete, {kept})\n"
        f"tp_orders-joined: created (2 partitions, delete, {kept})\n"
        f"tp_orders-unmatched: created (2 partitions, delete, {kept})\n"
        f"tp_orders-dlq: created (2 partitions, delete, {kept})\n"
        "tp_orders-join-tick: created (1 partitions, delete, retention.ms=86400000)\n"
    )
    assert topic_state(kafka, "tp-cust") == (2, {"cleanup.policy": "compact"})
    alter_topics(kafka, {"tp_orders-unmatched": {"retention.ms": "3600000"}})
    described = cli(kafka, "topics", "describe", "--pipeline", "tp_orders", extra_env=env)
    assert described.returncode == 0, described.stderr
    risk = (
        "tp_orders-unmatched may expire before tp-orders: retention.ms=3600000 (1h00m) is shorter "
        "than its 604800000 (168h00m)"
    )
    assert described.stdout.count("EXPIRY RISK") == 1
    assert f"  EXPIRY RISK: {risk}\n" in described.stdout
    assert [line for line in described.stdout.splitlines() if line[:1] != " "] == [
        "tp-cust: 2 partitions, end offsets 0",
        "tp-orders: 2 partitions, end offsets 0",
        "tp_orders-joined: 2 partitions, end offsets 0",
        "tp_orders-unmatched: 2 partitions, end offsets 0",
        "tp_orders-dlq: 2 partitions, end offsets 0",
        "tp_orders-join-tick: 1 partitions, end offsets 0",
    ]
    refused = cli(kafka, "topics", "create", "--pipeline", "nope", extra_env=env)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        "boardstream: error: --pipeline nope: no pipeline 'nope'; declared: tp_orders\n"
    )
    both = cli(kafka, "topics", "create", "--pipeline", "tp_orders", "--topic", "x", extra_env=env)
    assert (both.returncode, both.stderr) == (
        1,
        "boardstream: error: --pipeline and --topic: give one or the other\n",
    )
