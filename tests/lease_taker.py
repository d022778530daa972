"""A process that tries to take a lease another process holds, as a host whose clock runs ahead
would: ``python -m tests.lease_taker URL NAME TTL_MS SECONDS [AHEAD_S]``. It tries every 50 ms
for ``SECONDS`` (or until it takes it) and prints a JSON line per try: its own clock, the
lease's expiry in the database, and whether it took it. ``AHEAD_S`` sets only Python's clock
ahead (the leases' own code must not read it); libfaketime sets the whole process's.

A try whose own clock had passed the expiry is one a lease read on the hosts' clocks would
have granted: the tests ask for at least one of those, so that they catch that rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from boardstream.leases import Leases, leases


def main(url: str, name: str, ttl_ms: int, seconds: float, ahead_s: float = 0.0) -> None:
    if ahead_s:
        real = time.time
        time.time = lambda: real() + ahead_s  # type: ignore[assignment]
    store = Leases(url, ttl_ms)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with store.engine.connect() as connection:
            select = sa.select(leases.c.expires_at_ms).where(leases.c.name == name)
            expiry = connection.execute(select).scalar_one()
        own_ms = int(time.time() * 1000)
        taken = store.try_take(name, {"pid": 2, "host": "ahead"}) is not None
        print(json.dumps({"own_ms": own_ms, "expires_at_ms": expiry, "taken": taken}), flush=True)
        if taken:
            return
        time.sleep(0.05)


def tries(
    url: str,
    name: str,
    ttl_ms: int,
    seconds: float,
    ahead_s: float = 0.0,
    env: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The tries of a taker run as its own process (``env`` added to this one's)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.lease_taker", url, name, str(ttl_ms), str(seconds)]
        + ([str(ahead_s)] if ahead_s else []),
        cwd=Path(__file__).parents[1],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


if __name__ == "__main__":
    url, name, ttl_ms, seconds, *ahead = sys.argv[1:]
    main(url, name, int(ttl_ms), float(seconds), *(float(a) for a in ahead))
