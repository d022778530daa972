"""Assets the DAGs share: the pipeline's sink task updates ``board_detail``, which schedules
reconciliation."""

from __future__ import annotations

from airflow.sdk import Asset

BOARD_DETAIL = Asset("boardstream://board_detail")
