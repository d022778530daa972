"""The sink's writes are fenced by its checkpoint's lease, on SQLite and PostgreSQL: once another
driver holds the lease (this one cut off for longer than the TTL), a batch of this one commits
nothing, whatever its timing; while it holds the lease, a taker does not get it before its
transaction ends; a writer of a checkpoint whose lease this process does not hold writes
nothing; and on PostgreSQL a driver frozen inside its fenced transaction holds it up no longer
than a third of the TTL, its writes rolled back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from boardstream.leases import Held, LeaseLostError, Leases, leases
from boardstream.settings import Settings
from boardstream.sink import table
from boardstream.sink.job import BatchWriter
from boardstream.spark import checkpoint_lease
from tests.fixtures import detail_row, isolated_settings, new_database, sqlite_or_postgres_url

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


def test_no_taker_gets_the_lease_while_the_holders_fenced_write_is_open(
    settings: Settings,
) -> None:
    """The holder's batch, fenced, runs past the TTL: no taker gets the lease while that
    transaction is open (SQLite: the taker waits for it; PostgreSQL: it waits a third of the
    TTL, then finds the lease in use), so the holder's write lands before any taking. The fence
    renewed the lease to a TTL past the fence on the database's clock, not past the commit:
    once the transaction has ended the lease has expired, and the holder's next write is
    refused."""
    settings = settings.model_copy(update={"lease_ttl_s": 1.0})
    checkpoint = settings.checkpoint("board-detail-sink")
    name = checkpoint_lease.lease_name(checkpoint)
    writer = BatchWriter(settings, checkpoint)
    with checkpoint_lease.hold(settings, checkpoint, "board-detail-sink", {}):
        fence = checkpoint_lease.fence(settings, checkpoint)
        taken: list[tuple[object, float]] = []
        sqlite = writer.engine.dialect.name == "sqlite"
        with writer.engine.begin() as transaction:
            fence(transaction)
            transaction.execute(table.board_detail.insert().values(detail_row("b1", 1)))
            started = time.monotonic()
            taker = threading.Thread(
                target=lambda: taken.append(
                    (Leases.of(settings).try_take(name, SUCCESSOR), time.monotonic())
                )
            )
            taker.start()
            # Busy past the TTL (a statement running, not idle: PostgreSQL would close that).
            if sqlite:
                time.sleep(1.5)
                assert taker.is_alive(), "the taker did not wait for the open transaction"
            else:
                transaction.execute(sa.text("SELECT pg_sleep(1.5)"))
            committed = time.monotonic()
        taker.join(30)
        ((successor, taken_at),) = taken
        if sqlite:
            assert successor is not None and taken_at >= committed
        else:  # its wait bounded by a third of the TTL, well before the transaction ended
            assert successor is None and taken_at - started < 1.0 < committed - started
        with pytest.raises(LeaseLostError):
            writer.upsert_isolating([detail_row("b2", 2)])
    assert _boards(writer) == ["b1"]


def test_a_writer_of_a_checkpoint_whose_lease_is_not_held_here_writes_nothing(
    settings: Settings,
) -> None:
    """A query's writer in a process that holds no lease on its checkpoint (never took it, or
    its hold is over) cannot fence its writes: refused, naming the checkpoint, not written
    unfenced. A writer of no query (repair's) is not fenced."""
    checkpoint = settings.checkpoint("board-detail-sink")
    writer = BatchWriter(settings, checkpoint)
    refused = pytest.raises(
        checkpoint_lease.CheckpointNotHeldError,
        match=r"^checkpoint .*board-detail-sink: this process holds no lease on it",
    )
    with refused:
        writer.upsert_isolating([detail_row("b1", 1)])
    with checkpoint_lease.hold(settings, checkpoint, "board-detail-sink", {}):
        assert writer.upsert_isolating([detail_row("b2", 2)]) == {}
    with pytest.raises(checkpoint_lease.CheckpointNotHeldError):
        writer.upsert_isolating([detail_row("b3", 3)])
    assert BatchWriter(settings).upsert_isolating([detail_row("b4", 4)]) == {}
    assert _boards(writer) == ["b2", "b4"]


# A sink's driver inside its fenced transaction, its batch's row written, not yet committed.
FROZEN = """
import sys, time
from boardstream import database
from boardstream.leases import Leases
from boardstream.sink import table
from tests.fixtures import detail_row
url, ttl_ms = sys.argv[1], int(sys.argv[2])
store = Leases(url, ttl_ms)
engine = database.engine(url)
table.create(engine)
with store.hold("checkpoint:frozen", {"pid": 1}) as held, engine.begin() as transaction:
    store.fence(transaction, held)
    transaction.execute(table.board_detail.insert().values(detail_row("b1", 1)))
    print("fenced", flush=True)
    time.sleep(600)
"""


def test_a_driver_frozen_inside_its_fenced_write_holds_its_successor_up_no_longer_than_its_ttl(
    postgres, request
) -> None:
    """SIGSTOP of a sink's driver inside its fenced transaction, which locks the lease's row: the
    server closes its session after a third of the TTL idle (its write rolled back, the lock
    freed), and a successor waiting for the lease takes it once the TTL has run out, within
    its own wait; no waiter is held in the database until the frozen process resumes."""
    url, ttl_ms = new_database(postgres, request), 3_000
    frozen = subprocess.Popen(
        [sys.executable, "-c", FROZEN, url, str(ttl_ms)],
        cwd=Path(__file__).parents[2],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert frozen.stdout is not None and frozen.stdout.readline() == "fenced\n"
        os.kill(frozen.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        store = Leases(url, ttl_ms)
        with store.engine.connect() as connection:  # the expiry last committed, not the fence's
            expiry = connection.execute(sa.select(leases.c.expires_at_ms)).scalar_one()
        took: list[tuple[Held, float, int]] = []

        def successor() -> None:
            with store.hold("checkpoint:frozen", SUCCESSOR, wait_s=2 * ttl_ms / 1000) as held:
                with store.engine.connect() as connection:
                    its = connection.execute(sa.select(leases.c.expires_at_ms)).scalar_one()
                took.append((held, time.monotonic(), its))

        waiter = threading.Thread(target=successor, daemon=True)
        waiter.start()
        waiter.join(3 * ttl_ms / 1000)
        assert not waiter.is_alive(), "the successor was held in the database past its wait"
        ((held, taken_at, its_expiry),) = took
        assert held.epoch == 2 and taken_at - stopped < ttl_ms / 1000 + 1.5
        assert its_expiry - ttl_ms >= expiry  # taken only once the frozen one's TTL ran out
        with store.engine.connect() as connection:  # the frozen driver's write rolled back
            assert not list(connection.execute(sa.select(table.board_detail.c.board_id)))
    finally:
        os.kill(frozen.pid, signal.SIGCONT)
        frozen.kill()
        frozen.wait()
