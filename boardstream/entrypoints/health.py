"""Everything the "Pipeline health" page shows, gathered from where boardstream already keeps it:
the reconciliation ledger, the streaming jobs' progress lines, the compaction tuning log and the
output topics' retention (from the broker).

Plain JSON-able data, so the Airflow plugin only renders it and the same facts can be asserted
on in tests or served to any other client.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from boardstream import database, supervision
from boardstream.compaction import tuning_log
from boardstream.errors import BoardstreamError
from boardstream.kafka.clients import admin_client
from boardstream.kafka.retention import read_retention, reconciliation_overdue
from boardstream.locations import child
from boardstream.reconcile.checks.vocabulary import FAILING_PARTS, IN_TRANSIT, PARTS, SUMMARY_ORDER
from boardstream.reconcile.evidence import docs_store
from boardstream.reconcile.evidence import run_ledger as ledger
from boardstream.reconcile.evidence.data_docs import ASSETS, INDEX, VENDOR
from boardstream.settings import Settings
from boardstream.spark import standalone
from boardstream.spark.checkpoint_lease import last_holder
from boardstream.spark.slo import StreamSlo
from boardstream.stream_progress import ProgressStore

# "airflow:<dag id>/<run id>/<task id>", as the DAGs' tasks record who ran a reconciliation.
_AIRFLOW_RUN_BY = re.compile(r"^airflow:(?P<dag>[^/]+)/(?P<run>[^/]+)/(?P<task>[\w.-]+)")
# The page asks the broker for the outputs' retention and the live streams' lag; with the
# broker down it still answers within this many seconds (or the settings' connect timeout, if
# shorter) per question, retention and lag unknown.
_BROKER_WAIT_S = 2.0


def pipeline_health(
    settings: Settings, runs: int = 20, batches: int = 60, now: datetime | None = None
) -> dict[str, Any]:
    engine = database.engine(settings.database)
    stored = docs_store.sites(settings.database)
    kept = ledger.RunLedger.shipped(settings)
    recent = [_run(run, stored) for run in kept.recent_runs(engine, runs)]
    slo = StreamSlo.from_settings(settings)
    now = now or datetime.now(UTC)
    return {
        "reconciliation_runs": recent,
        "chart": balance_chart(recent),
        "streams": stream_progress(settings, batches, slo, now),
        "live": live_streams(settings, now),
        "stream_slo": {"max_batch_age_s": slo.max_batch_age_s, "max_lag": slo.max_lag},
        "compaction_changes": [_jsonable(change) for change in tuning_log.recent_changes(engine)],
        "evidence": evidence(settings, kept.last_verdict_at(engine), now),
    }


def _quick(settings: Settings) -> Settings:
    """``settings`` whose broker calls give up within the page's wait."""
    return settings.model_copy(
        update={"connect_timeout_s": min(settings.connect_timeout_s, _BROKER_WAIT_S)}
    )


def evidence(settings: Settings, last_verdict: datetime | None, now: datetime) -> dict[str, Any]:
    """The output topics' shortest retention (None: forever), the outputs that may expire
    before ``board`` and whether reconciliation is overdue against that retention; or, with
    the broker not answering, why the retention is unknown."""
    quick = _quick(settings)
    found: dict[str, Any] = {
        "last_verdict_at": last_verdict,
        "error": None,
        "retention_ms": None,
        "overdue": None,
        "risks": [],
    }
    try:
        kept = read_retention(admin_client(quick), quick)
    except BoardstreamError as error:
        return _jsonable({**found, "error": str(error)})
    return _jsonable(
        {
            **found,
            "retention_ms": kept.shortest_ms,
            "overdue": reconciliation_overdue(last_verdict, now, kept.shortest_ms),
            "risks": [str(risk) for risk in kept.risks],
        }
    )


def balance_chart(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The balance of each finished run (``runs`` newest first, as the page lists them), oldest
    first, for stacked bars: each run's id, verdict and finish time, and one series per part of
    ``source`` in the balance's order; a part that fails a run only when some run has any, so
    the chart names a loss only when there is one. An ERRORED run has no balance: left out."""
    finished = [run for run in reversed(runs) if run["finished_at"] and run["counts"]]
    shown = [
        part
        for part in PARTS
        if part not in FAILING_PARTS or any(run["counts"].get(part, 0) for run in finished)
    ]
    return {
        "runs": [{k: run[k] for k in ("run_id", "status", "finished_at")} for run in finished],
        "series": [
            {"part": part, "counts": [run["counts"].get(part, 0) for run in finished]}
            for part in shown
        ],
    }


def stream_progress(
    settings: Settings, batches: int, slo: StreamSlo, now: datetime
) -> list[dict[str, Any]]:
    """Per streaming query, its newest batch against ``slo`` at ``now`` and the rows/s of the
    last ``batches``."""
    store = ProgressStore(settings.database)
    streams = []
    for query in store.queries():
        records = store.read(query, last=batches)
        if records:
            latest = records[-1]
            streams.append(
                {
                    "query": query,
                    "batches": len(records),
                    "latest": {k: v for k, v in latest.items() if k != "sources"},
                    "slo": slo.for_query(_last_run_as(settings, query)).evaluate(latest, now),
                    "rows_per_s": [r["processed_rows_per_s"] for r in records],
                }
            )
    return streams


def _last_run_as(settings: Settings, query: str) -> dict[str, Any] | None:
    """How the query's last driver ran it (trigger, interval), as its default checkpoint's
    lease says; None without one."""
    holder = last_holder(settings, settings.checkpoint(query))
    return None if holder is None else dict(holder.details)


def live_streams(settings: Settings, now: datetime) -> dict[str, dict[str, Any]]:
    """Per supervised stream (board_detail_stream), what its supervisor knows: wanted or
    stopped on request, running or not, its Spark application and where to see it, uptime,
    restarts, and its health (the watch's own verdict) with the reasons. A job never started
    or stopped by a supervisor (the available-now pipeline's) is not listed."""
    live = {}
    for health in supervision.health(_quick(settings), int(now.timestamp() * 1000)):
        if not health.supervised:
            continue
        app = health.application_id
        live[health.job] = {
            "wanted": health.wanted,
            "running": health.running,
            "healthy": health.healthy,
            "reasons": list(health.reasons),
            "application_id": app,
            "spark_ui": spark_ui(settings, app) if app else None,
            # Its record after it is gone, on the shared filesystem: Spark 4's rolling event
            # log, a directory named after the application.
            "event_log": child(settings.spark_event_log_dir, f"eventlog_v2_{app}")
            if app and settings.spark_event_log_dir
            else None,
            "uptime_s": health.uptime_s,
            "restarts": health.restarts,
            "lag": health.lag,
            "lag_breached": health.lag_breached,
        }
    return live


def spark_ui(settings: Settings, application_id: str) -> str | None:
    """The application's page on its standalone master's web UI (local mode has no master;
    the drivers' own UI is off)."""
    host = standalone.master_host(settings)
    if host is None:
        return None
    return f"http://{host}:{settings.spark_master_ui_port}/app/?appId={application_id}"


def airflow_run(run_by: str) -> tuple[str, str, str] | None:
    """(dag id, run id, task id) of a run made by an Airflow task, from its ``run_by``."""
    match = _AIRFLOW_RUN_BY.match(run_by)
    return (match["dag"], match["run"], match["task"]) if match else None


def data_docs_page(recorded: str | None, stored: set[str]) -> str | None:
    """The run's Data Docs index as the UI serves it (``<site>/index.html``), if its site is
    among the ``stored`` ones (the oldest runs' are dropped past the retention). ``recorded``:
    the index's path on the host that ran it, whose folder names the site."""
    if not recorded:
        return None
    site = Path(recorded).parent.name
    return f"{site}/{INDEX}" if site in stored else None


def data_docs_file(settings: Settings, path: str) -> bytes | Path | None:
    """The file ``<site>/<path in it>`` of a run's Data Docs: a vendored asset from this install
    (its path), another from the database (its bytes), or None."""
    site, _, inside = path.partition("/")
    if docs_store.shared(inside):
        asset = (ASSETS / inside.removeprefix(f"{VENDOR}/")).resolve()
        return asset if asset.is_relative_to(ASSETS.resolve()) and asset.is_file() else None
    return docs_store.read(settings.database, site, inside or INDEX)


def _run(run: dict[str, Any], stored: set[str]) -> dict[str, Any]:
    return _jsonable(
        {
            **{k: run[k] for k in ("run_id", "started_at", "finished_at", "passed", "run_by")},
            "status": ledger.status_of(run),
            "error": run.get("error"),
            "counts": run["counts"] or {},
            "findings": findings(run["issues"], run["passed"]),
            "in_transit": in_transit(run["issues"]),
            "data_docs": data_docs_page(run["data_docs"], stored),
            "airflow": airflow_run(run["run_by"]),
            # Runs recorded before #22 were all full ones, of no recorded range.
            "kind": run.get("kind") or ledger.FULL,
            "covered": ledger.describe_covered(run["covered"]) if run.get("covered") else None,
            "table_slice": (
                ledger.describe_table_slice(run["table_slice"]) if run.get("table_slice") else None
            ),
        }
    )


def findings(
    issues: dict[str, tuple[int, list[str]]], passed: bool | None
) -> dict[str, dict[str, Any]]:
    """A run's findings in the summary's order, each with its count and, unless the run passed,
    its example ids: a passed run's findings are only reported ones (a replay, an expired
    source), worth a count, not a list. Boards in transit are not findings: left out."""
    return {
        kind: {"count": count, "examples": [] if passed else examples}
        for kind, (count, examples) in sorted(issues.items(), key=_in_summary_order)
        if count and kind not in IN_TRANSIT
    }


def in_transit(issues: dict[str, tuple[int, list[str]]]) -> dict[str, int]:
    """How many boards the run saw still on their way (pending, not yet read, not yet loaded)."""
    return {kind: issues[kind][0] for kind in IN_TRANSIT if kind in issues and issues[kind][0]}


def _in_summary_order(issue: tuple[str, Any]) -> tuple[int, str]:
    """The summary's order; a kind an older version recorded, after them, by name."""
    kind = issue[0]
    known = SUMMARY_ORDER.index(kind) if kind in SUMMARY_ORDER else len(SUMMARY_ORDER)
    return known, kind


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value
