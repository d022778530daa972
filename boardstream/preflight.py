"""Refuse fast: a job asks its broker, its database and its checkpoints' HDFS NameNode for an
answer before Spark starts.

Without it a job found out minutes in (``reconcile`` with no broker: 62-142 s of Spark, then the
error) or with a long SQLAlchemy traceback (a sink started while PostgreSQL was down). Each
entry point calls :func:`require` first: a missing service is one line naming it, in seconds.
"""

from __future__ import annotations

import logging
import socket
import time
from urllib.parse import urlsplit

from sqlalchemy.exc import SQLAlchemyError

from boardstream import database
from boardstream.errors import BoardstreamError, ServiceUnreachableError
from boardstream.kafka.clients import admin_client, cluster_metadata
from boardstream.settings import Settings

logger = logging.getLogger(__name__)

HDFS_DEFAULT_PORT = 8020  # a NameNode's RPC port when its URI names none


def require(settings: Settings, job: str, database: bool = True, checkpoints: bool = True) -> None:
    """The broker, the database (unless ``database`` is False: every Spark job takes its
    checkpoint's lease there, or loads into it) and the NameNode of checkpoints on HDFS (unless
    ``checkpoints`` is False) answer within the settings' ``connect_timeout_s`` each; else
    :class:`ServiceUnreachableError` naming what did not."""
    began = time.monotonic()
    try:
        cluster_metadata(admin_client(settings), settings)
    except BoardstreamError as error:  # no answer, or a rejected login: either way, not started
        raise ServiceUnreachableError(f"{job} not started: {error}") from None
    if database:
        require_database(settings, job)
    if checkpoints:
        require_namenode(settings, job)
    logger.debug("%s: its services answered in %.2f s", job, time.monotonic() - began)


def require_namenode(settings: Settings, job: str) -> None:
    """A connection to the NameNode of the checkpoints' root and of the Spark event log, when
    on HDFS: Hadoop's client retries one that does not answer for minutes before it fails."""
    located = {"the checkpoints' root": settings.checkpoints}
    if settings.spark_event_log_dir is not None:
        located["the Spark event log"] = settings.spark_event_log_dir
    for what, uri in located.items():
        parts = urlsplit(uri)
        if parts.scheme != "hdfs" or parts.hostname is None:
            continue
        port = parts.port or HDFS_DEFAULT_PORT
        try:
            socket.create_connection((parts.hostname, port), settings.connect_timeout_s).close()
        except OSError as error:
            raise ServiceUnreachableError(
                f"{job} not started: the HDFS NameNode at hdfs://{parts.hostname}:{port} ({what} "
                f"{uri}) did not answer ({error.strerror or error}); is it up? (`boardstream "
                "stack up --hdfs` for the local HDFS)"
            ) from None


def require_database(settings: Settings, job: str) -> None:
    """One connection to the settings' database, given ``connect_timeout_s`` to open; a SQLite
    file's folder is made first, as every engine of the platform makes it."""
    engine = database.engine(settings.database, settings.connect_timeout_s)
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
