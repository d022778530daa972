"""Data Docs in the database: every API server shows a run's site, wherever the run ran.

A reconciliation builds its run's site on its own host (GX writes files, :mod:`.data_docs` makes
them work offline); the site's files are then kept in the platform's database, which every host
reaches, and the health page's API server serves them from there. The vendored assets under
``static/vendor/`` are the same files in every site and ship with boardstream, so each host
serves its own copy and the database holds only the run's pages. The newest ``keep_runs`` sites
are kept, as on the reconciling host's disk.
"""

from __future__ import annotations

import time
from pathlib import Path

import sqlalchemy as sa

from boardstream.database import engine_with
from boardstream.reconcile.evidence.data_docs import VENDOR

metadata = sa.MetaData()

files = sa.Table(
    "data_docs_files",
    metadata,
    sa.Column("site", sa.String(200), primary_key=True),  # the run's site: reconciliation-<id>
    sa.Column("path", sa.String(1000), primary_key=True),  # in the site, e.g. index.html
    sa.Column("content", sa.LargeBinary, nullable=False),
    sa.Column("stored_at_ms", sa.BigInteger, nullable=False),
)


def shared(path: str) -> bool:
    """Whether ``path`` (in a site) is a vendored asset, served from the install."""
    return path.startswith(f"{VENDOR}/")


def save(url: str, site: Path, keep_runs: int) -> None:
    """Keep the built ``site``'s files (but the vendored assets) in the database at ``url``,
    replacing what it held of that site, and drop the sites of all but the newest
    ``keep_runs``, in one transaction."""
    pages = {
        path: file.read_bytes()
        for file in sorted(site.rglob("*"))
        if file.is_file() and not shared(path := file.relative_to(site).as_posix())
    }
    newest = (
        sa.select(files.c.site)
        .group_by(files.c.site)
        .order_by(sa.func.max(files.c.stored_at_ms).desc())
        .limit(keep_runs)
    )
    with engine_with(url, metadata).begin() as connection:
        latest = connection.execute(sa.select(sa.func.max(files.c.stored_at_ms))).scalar() or 0
        stored_at = max(int(time.time() * 1000), latest + 1)  # the newest, even within a ms
        connection.execute(files.delete().where(files.c.site == site.name))
        connection.execute(
            files.insert(),
            [
                {"site": site.name, "path": path, "content": content, "stored_at_ms": stored_at}
                for path, content in pages.items()
            ],
        )
        kept = list(connection.execute(newest).scalars())
        connection.execute(files.delete().where(files.c.site.not_in(kept)))


def sites(url: str) -> set[str]:
    """The sites stored."""
    with engine_with(url, metadata).connect() as connection:
        return set(connection.execute(sa.select(files.c.site).distinct()).scalars())


def read(url: str, site: str, path: str) -> bytes | None:
    """The file ``path`` of the stored ``site``, or None."""
    select = sa.select(files.c.content).where(files.c.site == site, files.c.path == path)
    with engine_with(url, metadata).connect() as connection:
        return connection.execute(select).scalar()
