"""Leases in the database: one holder at a time, renewed while it lives, free again once a dead
holder's TTL has run out, and a holder that lost its lease learns so."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from boardstream.leases import LeaseLostError, Leases, LeaseTimeoutError, leases
from tests import lease_taker

A, B = {"pid": 1, "host": "a"}, {"pid": 2, "host": "b"}


def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'leases.db'}"


def test_one_holder_at_a_time_until_it_releases(tmp_path: Path) -> None:
    store = Leases(url(tmp_path), ttl_ms=30_000)
    assert store.last_holder("stream-start:join") is None
    held = store.try_take("stream-start:join", A)
    assert held is not None and held.epoch == 1
    assert store.try_take("stream-start:join", B) is None
    assert store.holder("stream-start:join") == A
    assert store.try_take("stream-start:sink", B) is not None  # another lease
    store.release(held)
    assert store.holder("stream-start:join") is None
    assert store.last_holder("stream-start:join") == A  # history, for how it last ran
    again = store.try_take("stream-start:join", B)
    assert again is not None and again.epoch == 2


def test_a_lease_not_renewed_expires_and_its_holder_learns_it_lost_it(tmp_path: Path) -> None:
    store = Leases(url(tmp_path), ttl_ms=200)
    first = store.try_take("ckpt", A)
    assert first is not None
    with store.engine.connect() as connection:
        expiry = connection.execute(sa.select(leases.c.expires_at_ms)).scalar_one()
    while (second := store.try_take("ckpt", B)) is None:
        time.sleep(0.05)
    assert time.time() * 1000 >= expiry  # taken only once the first had expired
    assert second.epoch == first.epoch + 1
    assert store.renew(first) is False and first.lost.is_set()
    store.release(first)  # a stale release frees nothing
    assert store.holder("ckpt") == B


def test_a_lease_whose_row_was_deleted_is_lost_and_fences_its_holders_writes(
    tmp_path: Path,
) -> None:
    """Tampering: the lease's row deleted behind its holder. The holder must not go on as if
    it held it (nor take it back unnoticed at its next renewal), and a write it fences must not
    commit; a new taking starts the epochs again, which the old holder's epoch does not match."""
    store = Leases(url(tmp_path), ttl_ms=30_000)
    held = store.try_take("ckpt", A)
    assert held is not None
    with store.engine.begin() as connection:
        connection.execute(leases.delete())
    with pytest.raises(LeaseLostError), store.engine.begin() as connection:
        store.fence(connection, held)
    assert held.lost.is_set() and store.renew(held) is False
    again = store.try_take("ckpt", B)
    assert again is not None and again.epoch == 1 == held.epoch  # the epoch alone is reused
    held.lost.clear()  # as if the old holder had not tried since the deletion
    with pytest.raises(LeaseLostError), store.engine.begin() as connection:
        store.fence(connection, held)
    store.release(held)  # frees nothing of the new taking's
    assert store.renew(again) is True and store.holder("ckpt") == B


def test_a_held_lease_is_renewed_while_the_block_runs(tmp_path: Path) -> None:
    store = Leases(url(tmp_path), ttl_ms=300)
    with store.hold("ckpt", A) as held:
        for _ in range(10):  # over three TTLs
            time.sleep(0.1)
            assert store.try_take("ckpt", B) is None
        assert not held.lost.is_set()
    assert store.try_take("ckpt", B) is not None  # released on the way out


def test_a_taker_waits_for_the_holder_or_names_it(tmp_path: Path) -> None:
    store = Leases(url(tmp_path), ttl_ms=30_000)
    taken, release = threading.Event(), threading.Event()

    def hold_a() -> None:
        with store.hold("stream-start:join", A):
            taken.set()
            release.wait()

    first = threading.Thread(target=hold_a)
    first.start()
    taken.wait()
    busy = pytest.raises(LeaseTimeoutError, match=r"^stream-start:join is held by \{'pid': 1")
    with busy, store.hold("stream-start:join", B):
        pass
    threading.Timer(0.3, release.set).start()
    with store.hold("stream-start:join", B, wait_s=30) as held:
        assert held.epoch == 2 and store.holder("stream-start:join") == B
    first.join()


HOLDER = """
import sys, time
from boardstream.leases import Leases
with Leases(sys.argv[1], ttl_ms=1_000).hold("ckpt", {"pid": 9}):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_killed_holders_lease_is_free_once_its_ttl_ran_out(tmp_path: Path) -> None:
    """kill -9: nothing releases the lease; it expires, and is taken no earlier."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    finally:
        holder.kill()
        holder.wait()
    store = Leases(url(tmp_path), ttl_ms=30_000)
    with store.engine.connect() as connection:
        expiry = connection.execute(sa.select(leases.c.expires_at_ms)).scalar_one()
    assert store.holder("ckpt") == {"pid": 9}
    while (taken := store.try_take("ckpt", B)) is None:
        time.sleep(0.05)
    assert time.time() * 1000 >= expiry
    assert taken.epoch == 2


def test_a_holder_cut_off_from_the_database_gives_its_lease_up_before_it_expires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """It cannot learn that another took the lease, so it counts it lost once two thirds of
    the TTL passed without a renewal: before anyone else may take it."""
    store = Leases(url(tmp_path), ttl_ms=600)

    def cut_off(_held: object) -> bool:
        raise OperationalError("UPDATE leases", {}, Exception("could not connect to server"))

    warnings = caplog.at_level(logging.WARNING, logger="boardstream.leases")
    with warnings, store.hold("ckpt", A) as held:
        monkeypatch.setattr(store, "renew", cut_off)
        assert held.lost.wait(30)
        monkeypatch.undo()
    assert "lease ckpt not renewed: could not connect to server" in caplog.text
    assert caplog.messages[-1].startswith("lease ckpt (epoch 1) not renewed for ")
    assert caplog.messages[-1].endswith(" s: given up")


def test_a_holder_asked_to_let_go_learns_so_at_its_next_renewal_and_only_that_taking(
    tmp_path: Path,
) -> None:
    store = Leases(url(tmp_path), ttl_ms=30_000)
    assert store.ask_release("ckpt") is False  # nobody holds it
    held = store.try_take("ckpt", A)
    assert held is not None
    assert store.ask_release("ckpt") is True
    assert not held.release_asked.is_set()  # not before it renews
    assert store.renew(held) and held.release_asked.is_set()  # still its holder, asked
    store.release(held)
    again = store.try_take("ckpt", B)
    assert again is not None and store.renew(again)
    assert not again.release_asked.is_set()  # the ask was the earlier taking's


def test_a_leases_table_of_an_older_version_gains_the_ask_column(tmp_path: Path) -> None:
    old = sa.create_engine(url(tmp_path))
    with old.begin() as connection:
        connection.execute(
            sa.text(
                "CREATE TABLE leases (name VARCHAR(500) PRIMARY KEY, epoch BIGINT NOT NULL, "
                "holder TEXT NOT NULL, expires_at_ms BIGINT NOT NULL)"
            )
        )
        connection.execute(sa.text("INSERT INTO leases VALUES ('ckpt', 3, '{}', 0)"))
    old.dispose()
    store = Leases(url(tmp_path), ttl_ms=30_000)
    held = store.try_take("ckpt", A)
    assert held is not None and held.epoch == 4
    assert store.ask_release("ckpt") and store.renew(held) and held.release_asked.is_set()


def test_a_lease_given_up_for_silence_is_left_to_expire_not_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database away, then back: the holder gave its lease up after two thirds of the TTL
    of silence and stopped, but what its loss left in flight (a JVM's batch) counts on the TTL
    to stop before a successor starts. The block's end must not free it early."""
    store = Leases(url(tmp_path), ttl_ms=3_000)

    def cut_off(_held: object) -> bool:
        raise OperationalError("UPDATE leases", {}, Exception("could not connect to server"))

    with store.hold("ckpt", A) as held:
        monkeypatch.setattr(store, "renew", cut_off)
        assert held.lost.wait(30)
        monkeypatch.undo()  # the database is back before the block ends
    with store.engine.connect() as connection:
        expiry = connection.execute(sa.select(leases.c.expires_at_ms)).scalar_one()
    assert store.holder("ckpt") == A, "released at the block's end, before its TTL ran out"
    assert store.try_take("ckpt", B) is None
    while (taken := store.try_take("ckpt", B)) is None:
        time.sleep(0.05)
    assert time.time() * 1000 >= expiry and taken.epoch == 2


def test_a_taker_whose_clock_runs_ahead_cannot_take_a_renewed_lease(tmp_path: Path) -> None:
    """Expiry is the database's clock's: a process whose Python clock is a whole TTL ahead (by
    which every renewal of the holder looks expired) cannot take the lease. A host's whole
    clock ahead, on PostgreSQL: tests/integration/test_lease_clocks.py."""
    store = Leases(url(tmp_path), ttl_ms=1_000)
    with store.hold("ckpt", A) as held:
        seen = lease_taker.tries(url(tmp_path), "ckpt", 1_000, seconds=2.0, ahead_s=1.0)
        assert not held.lost.is_set()
    assert seen and not any(tried["taken"] for tried in seen)
    # Tries its own clock said came after the expiry: what a rule on the hosts' clocks grants.
    assert any(tried["own_ms"] >= tried["expires_at_ms"] for tried in seen)
