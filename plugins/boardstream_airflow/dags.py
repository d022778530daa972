"""What every boardstream DAG shares: a fixed start date with no catch-up (a missed interval
is new data for the next run, not a run of its own), one run at a time (the jobs resume from one
checkpoint), the module's docstring as its documentation and the ``boardstream`` tag. A DAG that
runs only on request starts unpaused: a trigger of a paused DAG waits, queued, until someone
unpauses it (a stop requested on a fresh stack never ran); a scheduled one starts paused, its
schedule the operator's to turn on."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from airflow.sdk import dag

START_DATE = datetime(2026, 1, 1)


def boardstream_dag(doc: str | None, *tags: str, **kwargs: Any) -> Callable:
    """``@dag`` with boardstream's defaults; ``kwargs`` (dag_id, schedule, params, ...) as
    ``@dag`` takes them."""
    kwargs.setdefault("is_paused_upon_creation", kwargs.get("schedule") is not None)
    kwargs.setdefault("start_date", START_DATE)
    return dag(
        catchup=False,
        max_active_runs=1,
        doc_md=doc,
        tags=["boardstream", *tags],
        **kwargs,
    )
