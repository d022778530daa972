"""Where the shipped board_detail pipeline's names are still written by hand (issue #64): its
fields, its table and its topic settings belong in its declaration
(boardstream/pipelines/declarations/board_detail.yml). The JVM operator names none of them; the
package modules below still do, and the list may only shrink: a module that starts naming them
fails here, and one that stops must leave the list."""

from __future__ import annotations

import re

from boardstream.settings import PROJECT_ROOT

NAMES = re.compile(
    r"\b(member_id|board_id|nickname|city|phone|created_ts|board_detail|member_topic|"
    r"board_topic|board_detail_topic)\b"
)
STILL_NAMING = {
    "aggregations/presets.py",
    "compaction/tuning.py",
    "entrypoints/cli.py",
    "entrypoints/compose/demo.py",
    "entrypoints/demo.py",
    "generator/board_records.py",
    "joins/job.py",
    "joins/member_table.py",
    "joins/parse.py",
    "joins/processor.py",
    "joins/records.py",
    "joins/schema.py",
    "joins/topics.py",
    "kafka/retention.py",
    "kafka/topics.py",
    "reconcile/checks/arrow_checks.py",
    "reconcile/checks/facts.py",
    "reconcile/checks/positions.py",
    "reconcile/checks/spark_checks.py",
    "reconcile/checks/table_checks.py",
    "reconcile/incremental/fact_store.py",
    "reconcile/incremental/inputs.py",
    "reconcile/incremental/table_watch.py",
    "reconcile/layout.py",
    "reconcile/reads/expired.py",
    "reconcile/reads/readers.py",
    "reconcile/reads/waiting.py",
    "settings.py",
    "sink/table.py",
    "supervision/streams.py",
}


def naming(root: str, suffix: str) -> set[str]:
    base = PROJECT_ROOT / root
    return {
        str(path.relative_to(base))
        for path in base.rglob(f"*{suffix}")
        if NAMES.search(path.read_text())
    }


def test_the_jvm_operator_names_no_field_of_the_shipped_pipeline() -> None:
    assert naming("jvm", ".java") == set()


def test_the_package_names_them_only_where_it_did() -> None:
    assert naming("boardstream", ".py") == STILL_NAMING
