"""What the reconciliation and repair DAGs' tasks share: one run, its summary in the task log,
and the task failed, with that summary, when the run did not pass."""

from __future__ import annotations

from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from boardstream.reconcile import SUMMARY_ORDER
from boardstream.settings import Settings


def reconcile_or_fail(
    spark: Any, settings: Settings, context: dict[str, Any], kind: str
) -> dict[str, Any]:
    """One run of ``kind`` (full or incremental)."""
    from boardstream import reconcile

    run_by = f"airflow:{context['dag'].dag_id}/{context['run_id']}/{context['ti'].task_id}"
    result = reconcile.run_once(spark, settings, run_by, kind=kind)
    summary = "\n".join(result.summary())
    print(summary)
    if not result.passed:
        raise AirflowFailException(summary)
    return xcom(result.run_id, result.reconciliation.counts)


def xcom(run_id: int, counts: dict[str, int]) -> dict[str, Any]:
    """What a passed run's task returns: its counts under the summary's names, in its order
    (defined in docs/RECONCILIATION.md, "What a run checks")."""
    return {"run_id": run_id, "passed": True, **{name: counts[name] for name in SUMMARY_ORDER}}
