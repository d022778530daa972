"""Where streaming queries' progress is kept: two tables in the platform's database, which
every host reads (a file under one host's ``var/`` is seen only there).

``stream_progress`` holds a row a batch (its summary, :func:`boardstream.spark.progress.summarize`)
in the order the drivers reported them; ``stream_idle`` the newest idle heartbeat of each query,
so a watcher can tell an idle stream from a stuck one. The health page, the watch and the
benches read them; the drivers' progress listener writes them.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from boardstream.database import engine_with, upsert_insert

metadata = sa.MetaData()

stream_progress = sa.Table(
    "stream_progress",
    metadata,
    # The order batches were reported in: a query's batch ids start again with a new checkpoint.
    sa.Column(
        "seq",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    sa.Column("query", sa.String(200), nullable=False),
    sa.Column("batch_id", sa.BigInteger, nullable=False),
    sa.Column("record", sa.Text, nullable=False),
    sa.Index("stream_progress_by_query", "query", "seq"),
)

stream_idle = sa.Table(
    "stream_idle",
    metadata,
    sa.Column("query", sa.String(200), primary_key=True),
    sa.Column("at_ms", sa.BigInteger, nullable=False),
)


class ProgressStore:
    """The progress tables of the database at ``url``, created on first use."""

    def __init__(self, url: str) -> None:
        self.url = url

    @property
    def engine(self) -> Engine:
        return engine_with(self.url, metadata)

    def append(self, records: list[dict[str, Any]]) -> None:
        """Batches' summaries, in the order given, in one transaction."""
        if not records:
            return
        rows = [
            {"query": r["query"] or "unnamed", "batch_id": r["batch_id"], "record": json.dumps(r)}
            for r in records
        ]
        with self.engine.begin() as connection:
            connection.execute(stream_progress.insert(), rows)

    def mark_idle(self, query: str, at_ms: int) -> None:
        with self.engine.begin() as connection:
            insert = upsert_insert(connection.dialect, stream_idle, "idle heartbeats")
            connection.execute(
                insert.values(query=query, at_ms=at_ms).on_conflict_do_update(
                    index_elements=["query"], set_={"at_ms": at_ms}
                )
            )

    def read(self, query: str, last: int | None = None) -> list[dict[str, Any]]:
        """The query's batches in the order reported; only the ``last`` ones if given."""
        select = (
            sa.select(stream_progress.c.record)
            .where(stream_progress.c.query == query)
            .order_by(stream_progress.c.seq.desc())
        )
        if last is not None:
            select = select.limit(last)
        with self.engine.connect() as connection:
            newest_first = connection.execute(select).scalars().all()
        return [json.loads(record) for record in reversed(newest_first)]

    def idle_since(self, query: str) -> int | None:
        """When ``query`` last reported itself idle (epoch ms), or None."""
        select = sa.select(stream_idle.c.at_ms).where(stream_idle.c.query == query)
        with self.engine.connect() as connection:
            return connection.execute(select).scalar()

    def queries(self) -> list[str]:
        """Every query that has reported a batch, by name."""
        select = sa.select(stream_progress.c.query).distinct().order_by(stream_progress.c.query)
        with self.engine.connect() as connection:
            return list(connection.execute(select).scalars())
