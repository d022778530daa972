"""Per-scenario services: a broker and a PostgreSQL of the scenario's own, which it may stop and
start again without disturbing any other test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from boardstream.settings import Settings
from boardstream.stack.kafka_broker import KafkaBroker
from boardstream.stack.postgres import Postgres
from tests.fixtures import isolated_settings, world_readable_dir


@dataclass
class Services:
    settings: Settings
    broker: KafkaBroker
    postgres: Postgres

    @property
    def database_url(self) -> str:
        return self.postgres.url

    def restart_broker(self) -> None:
        """A new broker process on the same data directory: the topics and offsets survive."""
        self.broker = KafkaBroker(self.settings)
        self.broker.start()

    def restart_postgres(self) -> None:
        self.postgres = Postgres(self.settings)
        self.postgres.start()


@pytest.fixture
def services() -> Iterator[Services]:
    var_dir = world_readable_dir("boardstream-faults-")
    settings = isolated_settings(var_dir)
    broker, postgres = KafkaBroker(settings), Postgres(settings)
    broker.start()
    postgres.start()
    running = Services(settings, broker, postgres)
    yield running
    running.broker.process.stop()
    running.postgres.process.stop()
    shutil.rmtree(var_dir, ignore_errors=True)
