"""Leases expire by the database's clock, not the hosts': a taker on a host whose clock runs a
whole TTL ahead (the process's clock faked by libfaketime, the database's own untouched) cannot
take a lease its holder renews. PostgreSQL only: SQLite's clock is its process's, and a SQLite
database is one host's, whose processes share one clock (tests/unit/test_leases.py sets a
process's Python clock ahead there)."""

from __future__ import annotations

import glob

import pytest

from boardstream.leases import Leases
from tests import lease_taker
from tests.fixtures import new_database

TTL_MS = 3_000
A = {"pid": 1, "host": "on-time"}


def libfaketime() -> str:
    """The preloadable libfaketime (Debian's libfaketime, which bin/setup installs)."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
    if not found:
        pytest.fail("libfaketime is not installed: run bin/setup --postgres")
    return found[0]


def test_a_taker_whose_host_clock_runs_ahead_cannot_take_a_renewed_lease(postgres, request) -> None:
    url = new_database(postgres, request)
    store = Leases(url, TTL_MS)
    ahead = {"LD_PRELOAD": libfaketime(), "FAKETIME": f"+{TTL_MS // 1000}s"}
    with store.hold("checkpoint:ahead", A) as held:
        seen = lease_taker.tries(url, "checkpoint:ahead", TTL_MS, seconds=4.0, env=ahead)
        assert not held.lost.is_set()
        assert store.holder("checkpoint:ahead") == A
    assert seen and not any(tried["taken"] for tried in seen)
    # Its clock was ahead, and past the expiry: a rule on the hosts' clocks would have granted.
    assert any(tried["own_ms"] >= tried["expires_at_ms"] for tried in seen)
