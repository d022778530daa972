"""The size check every job runs before it starts (boardstream/kafka/limits.py): the producers'
default limits, each topic's ``max.message.bytes`` read through the admin client (a fake passed
where the code takes one), and the refusal that names every record that would not fit and the
limit it would exceed."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka.admin import ConfigResource, ResourceType

from boardstream.errors import InvalidOptionError, UnknownTopicError
from boardstream.kafka.limits import (
    JAVA_MAX_REQUEST_SIZE,
    LIBRDKAFKA_MESSAGE_MAX_BYTES,
    librdkafka_producer_limit,
    require_fit,
    spark_producer_limit,
    topic_message_limits,
)
from boardstream.settings import Settings

SPARK_PRODUCER = "the producer's max.request.size (kafka.max.request.size)"


def settings() -> Settings:
    return Settings(
        _env_file=None,
        bootstrap_servers="broker:9092",
        connect_timeout_s=7.0,
        security_protocol="PLAINTEXT",
    )


class Done:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


class FakeAdmin:
    """Topics and their max.message.bytes, as list_topics and describe_configs answer."""

    def __init__(self, limits: dict[str, int]) -> None:
        self.limits = limits
        self.described: list[tuple[list[str], float]] = []

    def list_topics(self, timeout: float) -> SimpleNamespace:
        return SimpleNamespace(topics=dict.fromkeys(self.limits))

    def describe_configs(
        self, resources: list[ConfigResource], request_timeout: float
    ) -> dict[ConfigResource, Done]:
        assert all(r.restype == ResourceType.TOPIC for r in resources)
        self.described.append(([r.name for r in resources], request_timeout))
        return {
            r: Done({"max.message.bytes": SimpleNamespace(value=str(self.limits[r.name]))})
            for r in resources
        }


def test_the_producer_defaults_are_the_clients_own() -> None:
    assert (JAVA_MAX_REQUEST_SIZE, LIBRDKAFKA_MESSAGE_MAX_BYTES) == (1_048_576, 1_000_000)
    assert spark_producer_limit({}) == (SPARK_PRODUCER, 1_048_576)
    assert librdkafka_producer_limit({}) == ("the producer's message.max.bytes", 1_000_000)


def test_configured_producer_limits_win() -> None:
    options = {"kafka.max.request.size": "5242880", "kafka.bootstrap.servers": "b:1"}
    assert spark_producer_limit(options) == (SPARK_PRODUCER, 5_242_880)
    assert librdkafka_producer_limit({"message.max.bytes": 2_000_000})[1] == 2_000_000
    assert librdkafka_producer_limit({"message.max.bytes": "3000000"})[1] == 3_000_000


def test_topic_limits_are_read_for_each_topic() -> None:
    admin = FakeAdmin({"a": 100, "b": 2_000, "c": 5})
    assert topic_message_limits(admin, settings(), ["b", "a"]) == {"b": 2_000, "a": 100}
    assert admin.described == [(["b", "a"], 7.0)]


def test_limits_of_a_missing_topic_are_not_asked_for() -> None:
    admin = FakeAdmin({"a": 100})
    with pytest.raises(UnknownTopicError, match=r"^unknown topic\(s\) gone on broker:9092;"):
        topic_message_limits(admin, settings(), ["a", "gone"])
    assert admin.described == []


def test_records_that_fit_pass_even_at_the_exact_limit() -> None:
    admin = FakeAdmin({"out": 1_000, "dlq": 2_000})
    largest = {"out": (1_000, "a joined record"), "dlq": (999, "a dead letter")}
    assert require_fit(admin, settings(), (SPARK_PRODUCER, 1_000), largest) is None
    assert admin.described == [(["dlq", "out"], 7.0)]


def test_every_record_too_large_is_named_with_the_limit_it_exceeds() -> None:
    admin = FakeAdmin({"b-out": 5_000, "a-dlq": 800})
    largest = {
        "b-out": (1_500, "a joined record"),
        "a-dlq": (900, "a dead letter"),
    }
    with pytest.raises(InvalidOptionError) as raised:
        require_fit(
            admin, settings(), (SPARK_PRODUCER, 1_000), largest, bound_by="max record bytes"
        )
    assert str(raised.value) == (
        "refusing to start: a record could be too large to write, which would fail its batch "
        "on every run: a dead letter can be 900 bytes, more than max.message.bytes of topic "
        "a-dlq (800); a joined record can be 1,500 bytes, more than the producer's "
        "max.request.size (kafka.max.request.size) (1,000). Raise the limit, or lower the max "
        "record bytes."
    )
    assert raised.value.options == ("max record bytes",)


def test_a_record_over_both_limits_names_both() -> None:
    admin = FakeAdmin({"t": 1_000})
    with pytest.raises(InvalidOptionError) as raised:
        require_fit(
            admin, settings(), ("the producer's message.max.bytes", 2_000), {"t": (3_000, "x")}
        )
    assert str(raised.value) == (
        "refusing to start: a record could be too large to write, which would fail its batch "
        "on every run: x can be 3,000 bytes, more than the producer's message.max.bytes "
        "(2,000); x can be 3,000 bytes, more than max.message.bytes of topic t (1,000). "
        "Raise the limit."
    )
    assert raised.value.options == ()
