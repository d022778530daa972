"""Exclusive leases in the platform's database: what one process at a time may do, wherever it
runs.

A lock file holds only among the processes of one host; the database is the service every host
of a deployment reaches (PostgreSQL on a cluster, SQLite alone: the same code). A lease is a row
taken by one conditional UPDATE, so two takers cannot both win; its holder renews it while it
lives, and it is free again at most ``ttl_ms`` after its holder stops renewing (killed, its host
lost or cut off). Each taking numbers it anew (``epoch``) and writes a random token into the
row: a holder's renewal names both, so one that lost its lease learns so at its next renewal
instead of taking it back, even when the row was deleted and a new taking numbered alike.
Anyone may ask a lease's holder to let go (:meth:`Leases.ask_release`), from any host: the
holder learns it at its next renewal, where no signal by pid could reach it.

Expiry is set and read on the database's clock (:func:`boardstream.database.clock_ms`), never a
host's: a taker whose clock runs ahead cannot take a lease its holder still renews. The holder's
own watch over its renewals (:meth:`Leases.silent_too_long`) measures local elapsed time
(``time.monotonic``), which needs no agreement between clocks. A lease given up by its holder
(lost, or silent too long) is left to expire, never released early: whatever the holder's loss
left in flight has its TTL to stop. Each lease transaction, and each transaction a lease fences,
waits for a lock and stays idle for at most a third of the TTL on PostgreSQL
(:func:`boardstream.database.bound_waits`): a holder frozen inside one is closed by the server,
and its successor takes the lease once its TTL has run out. SQLite cannot close a frozen
holder's transaction; there a taker waits its busy timeout, then fails.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from boardstream.database import (
    bound_waits,
    clock_ms,
    driver_said,
    engine_with,
    lock_timed_out,
    upsert_insert,
)
from boardstream.errors import BoardstreamError

if TYPE_CHECKING:
    from boardstream.settings import Settings

logger = logging.getLogger(__name__)

metadata = sa.MetaData()

leases = sa.Table(
    "leases",
    metadata,
    sa.Column("name", sa.String(500), primary_key=True),
    sa.Column("epoch", sa.BigInteger, nullable=False),
    sa.Column("holder", sa.Text, nullable=False),  # JSON: who holds it, as the holder said
    sa.Column("expires_at_ms", sa.BigInteger, nullable=False),
    # When someone asked this taking's holder to let go; None while nobody has.
    sa.Column("release_asked_ms", sa.BigInteger),
)

WAIT_POLL_S = 0.5
TOKEN = "lease_token"  # in a row's holder JSON: which taking wrote it


class LeaseTimeoutError(BoardstreamError):
    """A lease stayed held by another for longer than the caller would wait."""


class LeaseLostError(BoardstreamError):
    """A write under a lease found it no longer its holder's: it must not commit."""


@dataclass
class Held:
    """A lease this process holds; ``lost`` is set once a renewal finds it taken or expired."""

    name: str
    epoch: int
    holder: Mapping[str, Any]
    # The lease's row as this taking wrote it (the holder's words and a random token): what
    # its renewals, fences and release match, so no other taking can pass for this one, even
    # one numbered alike after the row was deleted.
    stored: str = ""
    lost: threading.Event = field(default_factory=threading.Event)
    # When the last renewal that found it still this holder's was sent (monotonic): a renewal
    # hung on a network cut off returns nothing, so silence is measured from here.
    renewed_at: float = field(default_factory=time.monotonic)
    # Set once a renewal finds that someone asked the holder to let go (``ask_release``).
    release_asked: threading.Event = field(default_factory=threading.Event)


class Leases:
    """The leases of the database at ``url``."""

    def __init__(self, url: str, ttl_ms: int) -> None:
        self.url = url
        self.ttl_ms = ttl_ms

    @classmethod
    def of(cls, settings: Settings) -> Leases:
        """The platform's leases: in its database, with its TTL."""
        return cls(settings.database, int(settings.lease_ttl_s * 1000))

    @property
    def engine(self) -> Engine:
        return engine_with(self.url, metadata)

    @property
    def wait_ms(self) -> int:
        """How long a lease's transaction, or one it fences, may wait for a lock or stay idle
        (PostgreSQL): a renewal's period, so a frozen holder's transaction is closed well
        before its TTL has run out, and a healthy one, never idle for long, is not."""
        return self.ttl_ms // 3

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """A transaction on the leases' engine, its waits bounded (:func:`bound_waits`): set
        per transaction, as the one engine of a database serves leases of any TTL."""
        with self.engine.begin() as connection:
            bound_waits(connection, self.wait_ms, self.wait_ms)
            yield connection

    def try_take(self, name: str, holder: Mapping[str, Any]) -> Held | None:
        """The lease ``name`` if it is free (never taken, released or expired), else None; None
        too when its row stayed locked for the whole wait (PostgreSQL: a holder's fenced write
        under way, or a frozen one not yet closed by the server)."""
        stored = json.dumps({**holder, TOKEN: uuid.uuid4().hex})
        try:
            with self._transaction() as connection:
                now = clock_ms(connection.dialect)
                insert = upsert_insert(connection.dialect, leases, "leases")
                connection.execute(
                    insert.values(
                        name=name, epoch=0, holder="{}", expires_at_ms=0
                    ).on_conflict_do_nothing()
                )
                taken = connection.execute(
                    leases.update()
                    .where(leases.c.name == name, leases.c.expires_at_ms <= now)
                    .values(
                        epoch=leases.c.epoch + 1,
                        holder=stored,
                        expires_at_ms=now + self.ttl_ms,
                        release_asked_ms=None,
                    )
                )
                if taken.rowcount != 1:
                    return None
                epoch = connection.execute(
                    sa.select(leases.c.epoch).where(leases.c.name == name)
                ).scalar_one()
        except OperationalError as error:
            if lock_timed_out(error):
                return None
            raise
        return Held(name, epoch, holder, stored)

    def renew(self, held: Held) -> bool:
        """Extend ``held`` by the TTL; False (and ``held.lost`` set) once it is no longer this
        holder's: taken by another, or expired before this renewal."""
        with self._transaction() as connection:
            return self._renewed(connection, held)

    def fence(self, connection: Connection, held: Held) -> None:
        """Renew ``held`` inside the caller's transaction, so that the caller's writes commit
        only while it is this holder's (a fencing token, checked where the writes land): raise
        :class:`LeaseLostError` (and set ``held.lost``) once it is another's or expired. The
        renewal locks the lease's row (PostgreSQL) or the database (SQLite) until the
        transaction ends, so no taker gets the lease while the writes are open (SQLite: a taker
        waits for them; PostgreSQL: at most :attr:`wait_ms`, then finds it in use). It extends
        the lease to a TTL past the fence, not past the commit. On PostgreSQL the rest of the
        caller's transaction is bounded as the lease's own are: frozen inside it, its holder is
        closed by the server, its writes rolled back, and a taker gets the lease once its TTL
        has run out."""
        bound_waits(connection, self.wait_ms, self.wait_ms)
        if not self._renewed(connection, held):
            raise LeaseLostError(f"{held.name} (epoch {held.epoch}) is no longer held here")

    def _renewed(self, connection: Connection, held: Held) -> bool:
        now, sent = clock_ms(connection.dialect), time.monotonic()
        renewed = connection.execute(
            leases.update()
            .where(_mine(held), leases.c.expires_at_ms > now)
            .values(expires_at_ms=now + self.ttl_ms)
        )
        if renewed.rowcount != 1:
            held.lost.set()
            return False
        held.renewed_at = sent
        asked = sa.select(leases.c.release_asked_ms).where(_mine(held))
        if connection.execute(asked).scalar() is not None:
            held.release_asked.set()
        return not held.lost.is_set()

    def silent_too_long(self, held: Held) -> bool:
        """Whether ``held`` went unrenewed for two thirds of the TTL, however its renewals fare
        (failing, or hung on a network cut off): then it counts as lost (``held.lost`` set), for
        another may take it once the TTL has run out, and by then its holder must have stopped."""
        if held.lost.is_set():
            return True
        silent_s = time.monotonic() - held.renewed_at
        if silent_s * 1000 < self.ttl_ms * 2 / 3:
            return False
        logger.warning(
            "lease %s (epoch %d) not renewed for %.1f s: given up", held.name, held.epoch, silent_s
        )
        held.lost.set()
        return True

    def ask_release(self, name: str) -> bool:
        """Ask the live holder of ``name`` to let it go (it learns so at its next renewal, at
        most a third of the TTL later); False when nobody holds it."""
        with self._transaction() as connection:
            now = clock_ms(connection.dialect)
            asked = connection.execute(
                leases.update()
                .where(leases.c.name == name, leases.c.expires_at_ms > now)
                .values(release_asked_ms=now)
            )
        return asked.rowcount == 1

    def release(self, held: Held) -> None:
        """Free ``held`` now, if it is still this holder's."""
        with self._transaction() as connection:
            connection.execute(leases.update().where(_mine(held)).values(expires_at_ms=0))

    def holder(self, name: str) -> dict[str, Any] | None:
        """Who holds ``name`` now (what it said when it took it), or None."""
        select = sa.select(leases.c.holder).where(
            leases.c.name == name, leases.c.expires_at_ms > clock_ms(self.engine.dialect)
        )
        with self.engine.connect() as connection:
            return _said(connection.execute(select).scalar())

    def last_holder(self, name: str) -> dict[str, Any] | None:
        """Who held ``name`` last, holding it still or not (what it said when it took it), or
        None when nobody ever has."""
        select = sa.select(leases.c.holder).where(leases.c.name == name, leases.c.epoch > 0)
        with self.engine.connect() as connection:
            return _said(connection.execute(select).scalar())

    @contextmanager
    def hold(self, name: str, holder: Mapping[str, Any], wait_s: float = 0.0) -> Iterator[Held]:
        """Take ``name`` (waiting up to ``wait_s`` for it), keep it renewed while the block
        runs, and free it after. A renewal that fails (the database away) is retried; the
        lease counts as lost (``Held.lost``: the block must stop what the lease guards) when it
        is found taken or expired, or could not be renewed for two thirds of the TTL. A lease
        lost, or silent that long when the block ends, is not freed: it expires by its TTL,
        which is what its holder's self-fencing counts on (a successor only once whatever the
        lost holder had under way had that long to stop)."""
        deadline = time.monotonic() + wait_s
        while (held := self.try_take(name, holder)) is None:
            if time.monotonic() >= deadline:
                raise LeaseTimeoutError(
                    f"{name} is held by {self.holder(name) or 'another process'}"
                    + (f" (waited {wait_s:.0f} s)" if wait_s else "")
                )
            time.sleep(WAIT_POLL_S)
        stop = threading.Event()
        renewer = threading.Thread(
            target=self._keep, args=(held, stop), name=f"lease {name}", daemon=True
        )
        renewer.start()
        try:
            yield held
        finally:
            stop.set()
            renewer.join()
            if not self.silent_too_long(held):
                self.release(held)

    def _keep(self, held: Held, stop: threading.Event) -> None:
        """Renew every third of the TTL, until the lease is found lost: taken by another, or
        silent for two thirds of the TTL (:meth:`silent_too_long`, watched from outside this
        thread too, which a renewal hung on a dead connection would hold)."""
        while not stop.wait(self.ttl_ms / 3000):
            try:
                if not self.renew(held):
                    logger.warning("lease %s (epoch %d) was lost", held.name, held.epoch)
                    return
            except SQLAlchemyError as error:
                logger.warning("lease %s not renewed: %s", held.name, driver_said(error))
                if self.silent_too_long(held):
                    return


def _mine(held: Held) -> sa.ColumnElement[bool]:
    """The lease's row while it is still ``held``'s taking."""
    return sa.and_(
        leases.c.name == held.name, leases.c.epoch == held.epoch, leases.c.holder == held.stored
    )


def _said(stored: str | None) -> dict[str, Any] | None:
    """What a holder said when it took a lease, from its row (without the taking's token)."""
    if stored is None:
        return None
    said = json.loads(stored)
    said.pop(TOKEN, None)
    return said
