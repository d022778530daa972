"""The sink's writes are fenced by its checkpoint's lease, on SQLite and PostgreSQL: once another
driver holds the lease (this one cut off for longer than the TTL), a batch of this one commits
nothing, whatever its timing; while it holds the lease, a taker waits for its transaction."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from boardstream.leases import LeaseLostError, Leases, leases
from boardstream.settings import Settings
from boardstream.sink import table
from boardstream.sink.job import BatchWriter
from boardstream.spark import checkpoint_lease
from tests.fixtures import detail_row, isolated_settings, sqlite_or_postgres_url

SUCCESSOR = {"pid": 2, "host": "elsewhere", "job": "board-detail-sink", "since_ms": 1}


@pytest.fixture(params=["sqlite", "postgresql"])
def settings(request, tmp_path: Path) -> Settings:
    url = sqlite_or_postgres_url(request, tmp_path)
    return isolated_settings(tmp_path, database_url=url, lease_ttl_s=30)


def _boards(writer: BatchWriter) -> list[str]:
    with writer.engine.connect() as connection:
        return list(connection.execute(sa.select(table.board_detail.c.board_id)).scalars())


def _expire(settings: Settings, name: str) -> None:
    """This holder's TTL ran out unrenewed: what a driver cut off from the database leaves."""
    with Leases.of(settings).engine.begin() as connection:
        connection.execute(leases.update().where(leases.c.name == name).values(expires_at_ms=0))


def test_a_driver_whose_lease_was_taken_writes_nothing(settings: Settings) -> None:
    checkpoint = settings.checkpoint("board-detail-sink")
    writer = BatchWriter(settings, checkpoint)
    with checkpoint_lease.hold(settings, checkpoint, "board-detail-sink", {}) as held:
        assert writer.upsert_isolating([detail_row("b1", 1)]) == {}
        _expire(settings, held.name)
        assert Leases.of(settings).try_take(held.name, SUCCESSOR) is not None
        with pytest.raises(LeaseLostError, match=r"epoch 1\) is no longer held here"):
            writer.upsert_isolating([detail_row("b2", 2), detail_row("b1", 3)])
        assert held.lost.is_set()
    assert _boards(writer) == ["b1"]
    with writer.engine.connect() as connection:
        offsets = connection.execute(sa.select(table.board_detail.c.detail_offset)).scalars()
        assert list(offsets) == [1]
    owner = checkpoint_lease.holder(settings, checkpoint)  # the successor's, left as it was
    assert owner is not None and owner.host == "elsewhere"


def test_a_taker_waits_for_the_holders_open_write_and_finds_the_lease_renewed(
    settings: Settings,
) -> None:
    """The holder's TTL runs out while its batch's transaction, fenced, is open: the taker waits
    for that transaction, and finds the lease renewed by it; no write of the holder can land
    after a taking."""
    settings = settings.model_copy(update={"lease_ttl_s": 1.0})
    checkpoint = settings.checkpoint("board-detail-sink")
    name = checkpoint_lease.lease_name(checkpoint)
    writer = BatchWriter(settings, checkpoint)
    with checkpoint_lease.hold(settings, checkpoint, "board-detail-sink", {}) as held:
        fence = checkpoint_lease.fence(settings, checkpoint)
        assert fence is not None
        taken: list[tuple[object, float]] = []
        with writer.engine.begin() as transaction:
            fence(transaction)
            transaction.execute(table.board_detail.insert().values(detail_row("b1", 1)))
            taker = threading.Thread(
                target=lambda: taken.append(
                    (Leases.of(settings).try_take(name, SUCCESSOR), time.monotonic())
                )
            )
            taker.start()
            time.sleep(1.5)  # the TTL has run out, the transaction still open
            assert taker.is_alive(), "the taker did not wait for the open transaction"
            committed = time.monotonic()
        taker.join(30)
        ((successor, taken_at),) = taken
        assert successor is None and taken_at >= committed
        assert not held.lost.is_set()
    assert _boards(writer) == ["b1"]
