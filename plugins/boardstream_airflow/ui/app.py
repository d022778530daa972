"""The "Pipeline health" page and its JSON API, mounted on Airflow's API server.

Airflow does not authenticate plugin apps, so every route here depends on an authenticated
Airflow user (the UI's session cookie or a bearer token): an anonymous request gets 401.
"""

from __future__ import annotations

import mimetypes
from datetime import datetime
from pathlib import Path
from typing import Any

from airflow.api_fastapi.core_api.security import requires_authenticated
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.templating import Jinja2Templates

from boardstream.durations import span
from boardstream.entrypoints.health import data_docs_file, pipeline_health
from boardstream.reconcile import BALANCE
from boardstream.settings import Settings
from boardstream_airflow.ui.chart import sparkline

STATIC = Path(__file__).parent / "static"  # Chart.js (vendored) and the page's script

app = FastAPI(title="boardstream pipeline health", dependencies=[Depends(requires_authenticated())])
templates = Jinja2Templates(directory=Path(__file__).parent / "templates")
templates.env.globals.update(sparkline=sparkline, balance=BALANCE)
templates.env.filters["span"] = span


def when(iso: str | None) -> str:
    """An ISO timestamp from the ledger as ``2026-11-23 08:35:53``: to the second, with a space
    (not ``T``) between date and time, so it reads as one and the page never breaks it."""
    return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M:%S") if iso else ""


templates.env.filters["when"] = when


@app.get("/api/health")
def health() -> dict[str, Any]:
    return pipeline_health(Settings())


@app.get("/health", response_class=HTMLResponse)
def health_page(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(
        request, "health.html", {"health": pipeline_health(Settings())}
    )


@app.get("/data-docs/{path:path}")
def data_docs(path: str) -> Response:
    """A run's Great Expectations Data Docs (``<site>/<path>``), from the database whichever
    host ran it, behind the same authentication as the page."""
    found = data_docs_file(Settings(), path)
    if found is None:
        raise HTTPException(status_code=404, detail=f"no such file {path!r}")
    if isinstance(found, Path):
        return FileResponse(found)
    media_type = mimetypes.guess_type(path)[0] or "application/octet-stream"
    return Response(found, media_type=media_type)


@app.get("/static/{path:path}")
def static(path: str) -> FileResponse:
    """The page's scripts, as routes rather than a mount: a mounted app would skip the app's
    authentication."""
    return _file_under(STATIC, path)


def _file_under(root: Path, path: str) -> FileResponse:
    """The file at ``path`` inside ``root``; 404 for anything else (a folder, ``..``, a link
    out of it)."""
    root = root.resolve()
    file = (root / path).resolve()
    if not file.is_relative_to(root) or not file.is_file():
        raise HTTPException(status_code=404, detail=f"no such file {path!r}")
    return FileResponse(file)
