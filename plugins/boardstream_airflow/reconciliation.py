"""What the reconciliation and repair DAGs' tasks share: one run, its summary in the task log,
and the task failed, with that summary, when the run did not pass."""

from __future__ import annotations

from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from boardstream.settings import Settings


def reconcile_or_fail(spark: Any, settings: Settings, context: dict[str, Any]) -> dict[str, Any]:
    from boardstream.reconcile.run import reconcile_once

    run_by = f"airflow:{context['dag'].dag_id}/{context['run_id']}/{context['ti'].task_id}"
    result = reconcile_once(spark, settings, run_by)
    summary = "\n".join(result.summary())
    print(summary)
    if not result.passed:
        raise AirflowFailException(summary)
    return {"run_id": result.run_id, "passed": True, **result.reconciliation.counts}
