from __future__ import annotations

import pytest
from pydantic import ValidationError

from boardstream.settings import Settings


def test_env_vars_are_read_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOARDSTREAM_BOOTSTRAP_SERVERS", "kafka:29092")
    monkeypatch.setenv("BOARDSTREAM_BOARD_PARTITIONS", "6")
    settings = Settings()
    assert settings.to_confluent() == {"bootstrap.servers": "kafka:29092"}
    assert settings.to_spark_kafka_options() == {"kafka.bootstrap.servers": "kafka:29092"}
    assert settings.topic_partitions("board") == 6
    assert settings.topic_partitions("member") == 3
    assert settings.kafka_port == 29092


def test_defaults_live_under_var_dir(tmp_path) -> None:
    settings = Settings(var_dir=tmp_path)
    assert settings.database == f"sqlite:///{tmp_path / 'boardstream.db'}"
    assert settings.checkpoints == tmp_path / "checkpoints"
    assert settings.jars_dir == tmp_path / "jars"


@pytest.mark.parametrize("servers", ["localhost", "localhost:abc", ":9092"])
def test_bootstrap_servers_must_have_ports(servers: str) -> None:
    with pytest.raises(ValidationError, match="host:port"):
        Settings(bootstrap_servers=servers)
