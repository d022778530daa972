"""A running reconciliation's heartbeat, as Airflow tells a live task from a dead one: a daemon
thread refreshes the run's ``heartbeat_at`` in the ledger, so a run found open with an old
heartbeat is known dead, whichever host ran it (no pid file, no local lock: another host cannot
see those)."""

from __future__ import annotations

import logging
import threading
import time
from types import TracebackType

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from boardstream import database
from boardstream.reconcile.evidence.run_ledger import RunLedger

logger = logging.getLogger(__name__)

BEATS_PER_TIMEOUT = 20  # heartbeats within the bound: a few missed ones end no live run


class Heartbeat:
    """``with Heartbeat(engine, runs, run_id, timeout_s):`` refreshes the run's heartbeat in its
    pipeline's ledger every ``timeout_s / BEATS_PER_TIMEOUT`` seconds while the block runs."""

    def __init__(self, engine: Engine, runs: RunLedger, run_id: int, timeout_s: float) -> None:
        self.engine, self.runs, self.run_id, self.timeout_s = engine, runs, run_id, timeout_s
        self.interval_s = timeout_s / BEATS_PER_TIMEOUT
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, name=f"reconciliation-run-{run_id}-heartbeat", daemon=True
        )

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _error: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        self._stopped.set()
        # A beat stuck on an unanswering database is not waited for: it changes no closed run.
        self._thread.join(self.interval_s)

    def _beat(self) -> None:
        failing_since: float | None = None
        warned = False
        while not self._stopped.wait(self.interval_s):
            try:
                self.runs.beat(self.engine, self.run_id)
            except SQLAlchemyError as error:
                now = time.monotonic()
                failing_since = failing_since or now
                # A moment's lock or outage is the run's own business (it records its end or
                # says why not); half the bound without a beat risks its being closed: said
                # once, not at every beat.
                late = now - failing_since >= self.timeout_s / 2
                logger.log(
                    logging.WARNING if late and not warned else logging.DEBUG,
                    "reconciliation run %s: no heartbeat for %.0f s (%s); other runs close it "
                    "as interrupted after %.0f s",
                    self.run_id,
                    now - failing_since + self.interval_s,
                    database.driver_said(error),
                    self.timeout_s,
                )
                warned = warned or late
            else:
                failing_since, warned = None, False
