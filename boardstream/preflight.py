"""Refuse fast: a job asks its broker and its database for an answer before Spark starts.

Without it a job found out minutes in (``reconcile`` with no broker: 62-142 s of Spark, then the
error) or with a long SQLAlchemy traceback (a sink started while PostgreSQL was down). Each
entry point calls :func:`require` first: a missing service is one line naming it, in seconds.
"""

from __future__ import annotations

import logging
import math
import time

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from boardstream import database
from boardstream.errors import BoardstreamError, ServiceUnreachableError
from boardstream.kafka.clients import admin_client, cluster_metadata
from boardstream.settings import Settings

logger = logging.getLogger(__name__)

# The Spark jobs that read or write the database; every job needs the broker.
DATABASE_JOBS = frozenset({"board-detail-sink", "reconcile", "board-detail-repair"})


def require(settings: Settings, job: str, database: bool | None = None) -> None:
    """The broker, and the database when ``job`` uses one (``database``; by default the
    :data:`DATABASE_JOBS`), answer within the settings' ``connect_timeout_s`` each; else
    :class:`ServiceUnreachableError` naming what did not."""
    began = time.monotonic()
    try:
        cluster_metadata(admin_client(settings), settings)
    except BoardstreamError as error:  # no answer, or a rejected login: either way, not started
        raise ServiceUnreachableError(f"{job} not started: {error}") from None
    if job in DATABASE_JOBS if database is None else database:
        require_database(settings, job)
    logger.debug("%s: its services answered in %.2f s", job, time.monotonic() - began)


def require_database(settings: Settings, job: str) -> None:
    """One connection to the settings' database, given ``connect_timeout_s`` to open (a host
    that drops packets would otherwise hold libpq for the system's TCP timeout, minutes)."""
    url = sa.make_url(settings.database)
    connect_args = (
        {"connect_timeout": math.ceil(settings.connect_timeout_s)}
        if url.get_backend_name() == "postgresql"
        else {}
    )
    engine = sa.create_engine(url, connect_args=connect_args)
    try:
        with engine.connect():
            pass
    except SQLAlchemyError as error:
        raise ServiceUnreachableError(
            f"{job} not started: the database at {database.shown(settings.database)} did not "
            f"answer ({database.driver_said(error)}); is it up? (`boardstream stack up "
            "--postgres` for the local PostgreSQL)"
        ) from None
    finally:
        engine.dispose()
