"""Client configuration and the broker-facing error handling of boardstream/kafka/clients.py,
against a fake admin client passed where the code takes one (no broker): the deadline on
metadata, the authentication and TLS failures librdkafka reports only through ``error_cb``, a
new topic's configs asked of a broker that does not know it yet, and the messages a user reads
for each."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import ConfigResource, ResourceType

from boardstream.errors import (
    BoardstreamError,
    BrokerUnreachableError,
    KafkaAuthenticationError,
    UnknownTopicError,
)
from boardstream.kafka.clients import (
    LIBRDKAFKA_LOGGER,
    DeliveryErrors,
    _AuthWatch,
    client_config,
    cluster_metadata,
    require_topics,
    topic_configs,
)
from boardstream.settings import Settings

DOWN = KafkaError(KafkaError._TRANSPORT, "Local: Broker transport failure")


def settings(**fields: Any) -> Settings:
    values: dict[str, Any] = {
        "bootstrap_servers": "broker:9092",
        "connect_timeout_s": 10.0,
        "security_protocol": "PLAINTEXT",
    }
    return Settings(_env_file=None, **{**values, **fields})


def metadata(*topics: str) -> SimpleNamespace:
    return SimpleNamespace(topics={topic: SimpleNamespace(partitions={}) for topic in topics})


class FakeAdmin:
    """list_topics fails with each of ``failures`` in turn, then answers; poll serves the
    error callbacks queued in ``callbacks`` (as librdkafka does)."""

    def __init__(
        self,
        answer: SimpleNamespace,
        failures: list[KafkaError] | None = None,
        callbacks: list[KafkaError] | None = None,
        watched: bool = True,
    ) -> None:
        self.answer = answer
        self.failures = list(failures or [])
        self.callbacks = list(callbacks or [])
        self.timeouts: list[float] = []
        self.polls: list[float] = []
        if watched:
            self.auth = _AuthWatch()

    def list_topics(self, timeout: float) -> SimpleNamespace:
        self.timeouts.append(timeout)
        if self.failures:
            raise KafkaException(self.failures.pop(0))
        return self.answer

    def poll(self, timeout: float) -> int:
        self.polls.append(timeout)
        while self.callbacks:
            self.auth(self.callbacks.pop(0))
        return 0


class AlwaysDown(FakeAdmin):
    def list_topics(self, timeout: float) -> SimpleNamespace:
        self.timeouts.append(timeout)
        raise KafkaException(DOWN)


def test_client_config_is_the_settings_plus_the_logger_and_overrides() -> None:
    config = client_config(settings(), **{"group.id": "g", "bootstrap.servers": "other:1"})
    assert config == {
        "bootstrap.servers": "other:1",
        "security.protocol": "PLAINTEXT",
        "logger": LIBRDKAFKA_LOGGER,
        "group.id": "g",
    }
    assert LIBRDKAFKA_LOGGER.name == "boardstream.librdkafka"


def test_client_config_may_replace_the_logger() -> None:
    assert client_config(settings(), logger=None)["logger"] is None


@pytest.mark.parametrize("code", [KafkaError._AUTHENTICATION, KafkaError._SSL])
def test_the_auth_watch_remembers_a_rejected_login_or_handshake(code: int) -> None:
    watch = _AuthWatch()
    error = KafkaError(code, "rejected")
    watch(error)
    watch(DOWN)  # a later transport error does not hide it
    assert watch.error is error


def test_the_auth_watch_ignores_other_errors() -> None:
    watch = _AuthWatch()
    watch(DOWN)
    watch(KafkaError(KafkaError._ALL_BROKERS_DOWN, "all down"))
    assert watch.error is None


def test_delivery_errors_count_failures_and_keep_the_first() -> None:
    errors = DeliveryErrors()
    errors(None, SimpleNamespace(topic=lambda: "ok-topic"))
    assert (errors.count, errors.first) == (0, "")
    errors(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "too big"), SimpleNamespace(topic=lambda: "a"))
    errors(KafkaError(KafkaError._MSG_TIMED_OUT, "timed out"), SimpleNamespace(topic=lambda: "b"))
    assert (errors.count, errors.first) == (2, "a: too big")


def test_metadata_is_asked_for_in_short_attempts() -> None:
    answer = metadata("member")
    admin = FakeAdmin(answer)
    assert cluster_metadata(admin, settings(connect_timeout_s=10.0)) is answer
    assert cluster_metadata(admin, settings(connect_timeout_s=0.25)) is answer
    assert admin.timeouts == [1.0, 0.25]
    assert admin.polls == []


def test_a_broker_that_answers_late_is_waited_for() -> None:
    answer = metadata()
    admin = FakeAdmin(answer, failures=[DOWN, DOWN])
    assert cluster_metadata(admin, settings()) is answer
    assert (len(admin.timeouts), admin.polls) == (3, [0, 0])


def test_silence_until_the_deadline_is_one_clear_error() -> None:
    admin = AlwaysDown(metadata())
    with pytest.raises(BrokerUnreachableError) as raised:
        cluster_metadata(admin, settings(connect_timeout_s=0.001))
    assert str(raised.value) == (
        "no Kafka broker answered at broker:9092 within 0.001s "
        "(Local: Broker transport failure); is the stack up? (`boardstream stack up`)"
    )
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_an_admin_without_an_auth_watch_still_gets_the_deadline() -> None:
    admin = AlwaysDown(metadata(), watched=False)
    with pytest.raises(BrokerUnreachableError, match=r"^no Kafka broker answered at broker:9092"):
        cluster_metadata(admin, settings(connect_timeout_s=0.001))


def test_a_rejected_login_is_reported_at_once_naming_the_user() -> None:
    sasl = settings(
        security_protocol="SASL_PLAINTEXT", sasl_username="alice", sasl_password="secret-pw"
    )
    rejected = KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error")
    admin = FakeAdmin(metadata(), failures=[DOWN], callbacks=[rejected])
    with pytest.raises(KafkaAuthenticationError) as raised:
        cluster_metadata(admin, sasl)
    assert str(raised.value) == (
        "Kafka at broker:9092: authentication failed for user 'alice' (SASL_PLAINTEXT, "
        "SCRAM-SHA-512); check BOARDSTREAM_SASL_USERNAME and BOARDSTREAM_SASL_PASSWORD"
    )
    assert "secret-pw" not in str(raised.value)
    assert len(admin.timeouts) == 1, "known within one attempt, not at the deadline"


def test_a_failed_tls_handshake_names_the_ca_setting() -> None:
    tls = settings(security_protocol="SSL", ssl_ca_location=Path("/etc/kafka/ca.pem"))
    handshake = KafkaError(KafkaError._SSL, "certificate verify failed")
    admin = FakeAdmin(metadata(), failures=[DOWN], callbacks=[handshake])
    with pytest.raises(KafkaAuthenticationError) as raised:
        cluster_metadata(admin, tls)
    assert str(raised.value) == (
        "Kafka at broker:9092: TLS handshake failed (certificate verify failed); check "
        "BOARDSTREAM_SSL_CA_LOCATION (now /etc/kafka/ca.pem): it must hold the CA that signed "
        "the broker's certificate"
    )


def test_required_topics_that_exist_give_the_metadata() -> None:
    answer = metadata("member", "board", "other")
    assert require_topics(FakeAdmin(answer), settings(), ["board", "member"]) is answer


def test_missing_topics_are_named_in_the_order_asked() -> None:
    admin = FakeAdmin(metadata("board"))
    with pytest.raises(UnknownTopicError) as raised:
        require_topics(admin, settings(), ["zeta", "board", "alpha"])
    assert str(raised.value) == (
        "unknown topic(s) zeta, alpha on broker:9092; create them with `boardstream topics create`"
    )


UNKNOWN = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, "Broker: Unknown topic or partition")


class Answer:
    """A describe_configs future: its configs, or its error."""

    def __init__(self, topic: str, error: KafkaError | None) -> None:
        self.topic, self.error = topic, error

    def result(self) -> dict[str, SimpleNamespace]:
        if self.error is not None:
            raise KafkaException(self.error)
        return {"retention.ms": SimpleNamespace(value=f"{self.topic}-ms")}


class LaggingBrokers:
    """describe_configs answers each topic's errors in ``lag`` in turn, then its configs: the
    brokers that have not yet applied a topic's creation."""

    def __init__(self, lag: dict[str, list[KafkaError]]) -> None:
        self.lag = {topic: list(errors) for topic, errors in lag.items()}
        self.asked: list[list[str]] = []

    def describe_configs(
        self, resources: list[ConfigResource], request_timeout: float
    ) -> dict[ConfigResource, Answer]:
        assert all(r.restype == ResourceType.TOPIC for r in resources)
        self.asked.append([r.name for r in resources])
        return {r: Answer(r.name, (self.lag.get(r.name) or [None]).pop(0)) for r in resources}


def test_a_new_topic_unknown_to_the_broker_asked_is_asked_again() -> None:
    admin = LaggingBrokers({"board": [UNKNOWN, UNKNOWN]})
    configs = topic_configs(admin, settings(), ["member", "board"])
    assert {name: entries["retention.ms"].value for name, entries in configs.items()} == {
        "member": "member-ms",
        "board": "board-ms",
    }
    assert admin.asked == [["member", "board"], ["board"], ["board"]]


def test_a_topic_still_unknown_at_the_deadline_is_an_error_naming_it() -> None:
    admin = LaggingBrokers({"board": [UNKNOWN] * 1000})
    with pytest.raises(BoardstreamError) as raised:
        topic_configs(admin, settings(connect_timeout_s=0.001), ["board"])
    assert str(raised.value) == (
        "reading the configs of board failed: KafkaError{code=UNKNOWN_TOPIC_OR_PART,val=3,"
        'str="Broker: Unknown topic or partition"}'
    )


def test_other_config_errors_are_not_retried() -> None:
    denied = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "denied")
    admin = LaggingBrokers({"board": [denied]})
    with pytest.raises(BoardstreamError, match=r"^reading the configs of board failed: "):
        topic_configs(admin, settings(), ["board"])
    assert admin.asked == [["board"]]


def test_no_topics_ask_nothing() -> None:
    admin = LaggingBrokers({})
    assert topic_configs(admin, settings(), []) == {}
    assert admin.asked == []
