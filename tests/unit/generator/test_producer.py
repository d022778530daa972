"""``boardstream produce`` against a fake producer (the seam: ``reliable_producer``): every
planned record goes to its topic in plan order with the reliable producer's settings, a full
local queue is waited out, and the manifest is written only when every record was
acknowledged; otherwise the error says how many were not and why. The broker's side is the
integration tier's (test_produce)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from boardstream.errors import BoardstreamError
from boardstream.generator import producer
from boardstream.generator.manifest import Manifest
from boardstream.generator.plan import STREAM, TABLE, GeneratorOptions, Plan
from boardstream.settings import Settings

OPTIONS = GeneratorOptions(members=4, boards=5, deletes=1, malformed=1)


class Error:
    def __init__(self, text: str) -> None:
        self.text = text

    def str(self) -> str:
        return self.text


class Message:
    def __init__(self, topic: str) -> None:
        self._topic = topic

    def topic(self) -> str:
        return self._topic


class Producer:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.sent: list[tuple[str, bytes, bytes | None]] = []
        self.polls: list[float] = []
        self.full = 0  # how many produce calls find the local queue full
        self.failed: list[str] = []  # deliveries reported as failed, by topic, at flush
        self.unflushed = 0

    def produce(self, topic: str, value: bytes | None, key: bytes) -> None:
        if self.full:
            self.full -= 1
            raise BufferError("Local: Queue full")
        self.sent.append((topic, key, value))

    def poll(self, timeout: float) -> int:
        self.polls.append(timeout)
        return 0

    def flush(self, timeout: float) -> int:
        self.flush_timeout = timeout
        for topic in self.failed:
            self.config["on_delivery"](Error("Broker: Not enough in-sync replicas"), Message(topic))
        return self.unflushed


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(var_dir=tmp_path, connect_timeout_s=5.0).with_topic_prefix("t")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    made: dict[str, Any] = {"checked": []}

    def reliable_producer(_settings: Settings, **config: Any) -> Producer:
        made["producer"] = made.get("producer") or Producer(config)
        made["producer"].config = config
        return made["producer"]

    monkeypatch.setattr(producer, "admin_client", lambda _settings: "admin")
    monkeypatch.setattr(
        producer,
        "require_topics",
        lambda admin, _settings, topics: made["checked"].append((admin, topics)),
    )
    monkeypatch.setattr(producer, "reliable_producer", reliable_producer)
    return made


def test_every_record_in_plan_order_then_the_manifest(fake, settings, tmp_path) -> None:
    path = tmp_path / "out" / "manifest.json"
    manifest = producer.produce(settings, OPTIONS, path, producer_overrides={"linger.ms": 5})
    planned = list(Plan(OPTIONS))
    topics = {TABLE: "t-member", STREAM: "t-board"}
    assert fake["checked"] == [("admin", ["t-member", "t-board"])]
    sent: Producer = fake["producer"]
    assert sent.sent == [(topics[r.topic], r.key, r.value) for r in planned]
    config = dict(sent.config)
    assert isinstance(config.pop("on_delivery"), producer.DeliveryErrors)
    assert config == {
        "delivery.report.only.error": True,
        "compression.type": "lz4",
        "batch.size": 1_000_000,
        "queue.buffering.max.kbytes": 262_144,
        "linger.ms": 5,
    }
    assert sent.flush_timeout == 30.0  # six connect timeouts
    assert manifest.topics == topics
    assert sum(manifest.counts.values()) == len(planned) == Plan(OPTIONS).size
    assert Manifest.read(path).to_json() == manifest.to_json()


def test_overrides_win_over_the_defaults(fake, settings, tmp_path) -> None:
    producer.produce(settings, OPTIONS, tmp_path / "m.json", producer_overrides={"batch.size": 1})
    assert fake["producer"].config["batch.size"] == 1


def test_a_full_local_queue_is_drained_and_the_record_retried(fake, settings, tmp_path) -> None:
    fake["producer"] = Producer({})
    fake["producer"].full = 2
    producer.produce(settings, OPTIONS, tmp_path / "m.json")
    assert fake["producer"].polls[:2] == [0.05, 0.05]
    assert len(fake["producer"].sent) == Plan(OPTIONS).size  # each record once


@pytest.mark.parametrize(
    ("failed", "unflushed", "reason"),
    [
        (["t-board", "t-member"], 0, "t-board: Broker: Not enough in-sync replicas"),
        ([], 3, "flush timed out"),
        (["t-member"], 2, "t-member: Broker: Not enough in-sync replicas"),
    ],
)
def test_unacknowledged_records_fail_without_a_manifest(
    failed, unflushed, reason, fake, settings, tmp_path
) -> None:
    fake["producer"] = Producer({})
    fake["producer"].failed = failed
    fake["producer"].unflushed = unflushed
    path = tmp_path / "m.json"
    with pytest.raises(BoardstreamError) as refused:
        producer.produce(settings, OPTIONS, path)
    size = Plan(OPTIONS).size
    assert str(refused.value) == (
        f"{len(failed) + unflushed} of {size} records were not acknowledged by "
        f"localhost:9092 (first error: {reason}); no manifest written"
    )
    assert not path.exists()
