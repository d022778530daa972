"""One vocabulary (issue #18): the names the checks define, and no others, in the summary's order,
in the one definition (docs/RECONCILIATION.md, "What a run checks"), the "Pipeline health" page
rendered from a real SQLite ledger, the reconciliation DAG's XCom and the demo's printout."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from boardstream import database
from boardstream.entrypoints.demo import _print_reconciliation
from boardstream.entrypoints.health import pipeline_health
from boardstream.reconcile.checks.spark_checks import BALANCE, COUNTS, FINDINGS
from boardstream.reconcile.checks.vocabulary import SUMMARY_ORDER
from boardstream.settings import PROJECT_ROOT, Settings
from tests.fixtures import isolated_settings
from tests.store import RUNS

NAMES = {*COUNTS, *FINDINGS}
RUN_BY = "airflow:reconciliation/manual__vocab/reconcile"
# A passed run with boards waiting and a reported replay; then a failed one that lost a board.
PASSED_COUNTS = {
    **dict.fromkeys(NAMES, 0),
    **{"source": 10, "read": 8, "not_yet_read": 2, "joined": 5, "unmatched": 1},
    **{"dead_lettered": 1, "pending": 1, "topic_replays": 1, "expected_table_rows": 5},
}
PASSED_FINDINGS = {"topic_replays": (1, ["b3"]), "pending": (1, ["b7"])}
FAILED_COUNTS = {**PASSED_COUNTS, "pending": 0, "missing": 1, "missing_in_table": 1}
FAILED_FINDINGS = {"missing_in_table": (1, ["b2"]), "missing": (1, ["b4"])}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Two runs stored in a real SQLite ledger, as reconcile_once stores them."""
    settings = isolated_settings(tmp_path)
    engine = database.engine(settings.database)
    for passed, counts, findings in (
        (True, PASSED_COUNTS, PASSED_FINDINGS),
        (False, FAILED_COUNTS, FAILED_FINDINGS),
    ):
        run_id = RUNS.start_run(engine, {}, RUN_BY)
        balance = {0: {name: counts[name] for name in BALANCE}}
        RUNS.finish_run(engine, run_id, passed, counts, findings, None, balance)
    return settings


def test_the_summary_order_is_the_checks_names_balance_first() -> None:
    assert SUMMARY_ORDER[: len(BALANCE)] == BALANCE
    assert sorted(SUMMARY_ORDER) == sorted(NAMES)
    assert len(SUMMARY_ORDER) == len(NAMES)


def test_the_docs_define_each_name_once_and_no_other() -> None:
    page = (PROJECT_ROOT / "docs" / "RECONCILIATION.md").read_text()
    section = page.split("## What a run checks: the vocabulary\n", 1)[1].split("\n## ", 1)[0]
    defined = re.findall(r"\*\*([a-z_]+)\*\*", section)
    assert sorted(defined) == sorted(NAMES)
    assert [name for name in defined if name in BALANCE] == list(BALANCE)
    # Once in all the documentation: the README and every page of docs/.
    docs = [PROJECT_ROOT / "README.md", *(PROJECT_ROOT / "docs").glob("*.md")]
    texts = {path.name: path.read_text() for path in docs}
    assert all(sum(text.count(f"**{name}**") for text in texts.values()) == 1 for name in NAMES)
    assert [name for name, text in texts.items() if "in_flight" in text] == []


def test_the_page_shows_the_balance_and_stacked_bars_in_the_checks_names(
    airflow_home: Path, settings: Settings
) -> None:
    from boardstream_airflow.ui.app import templates  # airflow_home: Airflow is configured

    page = templates.get_template("health.html").render(health=pipeline_health(settings))
    runs = page.split('<table id="reconciliation-runs">', 1)[1].split("</table>", 1)[0]
    header = runs.split("</tr>", 1)[0].replace("<wbr>", "")  # a name may break after a "_"
    assert re.findall(r"<th>([a-z_]+)</th>", header) == ["run", *BALANCE]
    for run_id, counts in ((1, PASSED_COUNTS), (2, FAILED_COUNTS)):
        row = runs.split(f'<tr data-run="{run_id}">', 1)[1].split("</tr>", 1)[0]
        cells = re.findall(r'<td data-count="([a-z_]+)">([\d,]+)</td>', row)
        assert cells == [(name, f"{counts[name]:,}") for name in BALANCE]
    passed = runs.split('<tr data-run="1">', 1)[1].split("</tr>", 1)[0]
    assert re.findall(r'<span data-finding="(\w+)">([^<]*)</span>', passed) == [
        ("topic_replays", "topic_replays (1)"),
    ]
    assert re.findall(r'<span data-transit="(\w+)">([^<]*)</span>', passed) == [
        ("pending", "pending 1"),
    ]
    assert "b7" not in passed and "data-ids" not in passed  # collapsed to counts
    failed = runs.split('<tr data-run="2">', 1)[1].split("</tr>", 1)[0]
    assert re.findall(r'<div data-ids="(\w+)">([^<]*)</div>', failed) == [
        ("missing", "missing (1): b4"),
        ("missing_in_table", "missing_in_table (1): b2"),
    ]

    embedded = page.split('<script type="application/json" id="balance-data">', 1)[1]
    chart = json.loads(embedded.split("</script>", 1)[0])
    assert [run["run_id"] for run in chart["runs"]] == [1, 2]
    parts = ["not_yet_read", "joined", "unmatched", "dead_lettered", "pending", "missing"]
    assert chart["series"] == [
        {"part": part, "counts": [PASSED_COUNTS[part], FAILED_COUNTS[part]]} for part in parts
    ]
    named = re.findall(r'data-(?:count|finding|ids|transit)="([^"]*)"', page)
    assert set(named) <= NAMES
    assert "in_flight" not in page


def test_the_xcom_is_the_counts_under_the_summary_names(airflow_home: Path) -> None:
    from boardstream_airflow.reconciliation import xcom

    assert list(xcom(4, FAILED_COUNTS)) == ["run_id", "passed", *SUMMARY_ORDER]
    assert xcom(4, FAILED_COUNTS)["missing"] == 1
    with pytest.raises(KeyError, match="conflicting"):
        xcom(4, {name: 0 for name in NAMES if name != "conflicting"})


def test_the_demo_prints_the_balance_then_the_findings_in_the_summary_order(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _print_reconciliation(settings, RUN_BY) is False  # the newest run by RUN_BY: 2
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "reconciliation run 2: FAILED"
    names = [line.split()[0].rstrip(":") for line in lines[1:]]
    assert names == [*BALANCE, "missing_in_table"]  # missing is in the balance already
    assert lines[-1] == "  missing_in_table: 1 (b2)"
