"""Replaying a topic (boardstream/kafka/replay.py) gives up with a clear error instead of
waiting forever when nothing can be read, and has nothing to wait for when every partition is
empty. No broker: the consumer is pointed at a port where nothing listens (127.0.0.1:1), so
each test touches only the client library. Reading real records is covered on a broker by the
compaction tests (tests/integration/test_compaction.py)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Message

from boardstream.errors import BoardstreamError
from boardstream.kafka.replay import replay
from boardstream.settings import Settings


def settings(connect_timeout_s: float) -> Settings:
    return Settings(
        _env_file=None,
        bootstrap_servers="127.0.0.1:1",
        connect_timeout_s=connect_timeout_s,
        security_protocol="PLAINTEXT",
    )


def test_empty_partitions_are_not_read_at_all() -> None:
    handled: list[Message] = []
    advanced: list[int] = []
    began = time.monotonic()
    replay(settings(10.0), "t", {0: 0, 1: 0}, handled.append, advanced.append)
    assert (handled, advanced) == ([], [])
    assert time.monotonic() - began < 5.0, "returned without waiting for a broker"


def test_nothing_read_for_three_connect_timeouts_is_an_error() -> None:
    handled: list[Message] = []
    advanced: list[int] = []
    with pytest.raises(BoardstreamError, match=r"^reading t\[0\]: nothing read for 0\.03s$"):
        replay(settings(0.01), "t", {0: 5, 1: 0}, handled.append, advanced.append)
    assert handled == []
    assert advanced == [], "the idle check comes before a chunk is counted"
