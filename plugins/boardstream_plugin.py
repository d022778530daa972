"""Registers boardstream with Airflow: the "Pipeline health" page (a FastAPI app mounted on the
API server under /boardstream, shown in the UI's navigation)."""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin

from boardstream_airflow.ui.app import app


class BoardstreamPlugin(AirflowPlugin):
    name = "boardstream"
    fastapi_apps: ClassVar[list[dict[str, Any]]] = [
        {"app": app, "url_prefix": "/boardstream", "name": "boardstream"}
    ]
    external_views: ClassVar[list[dict[str, Any]]] = [
        {
            "name": "Pipeline health",
            "href": "boardstream/health",
            "destination": "nav",
            "url_route": "pipeline-health",
        }
    ]
