"""The GX suite fails exactly the checks the reconciled data breaks, and renders Data Docs.

Real Great Expectations, no mocks: each case builds an ephemeral context, runs the Checkpoints
and writes a Data Docs site under tmp_path.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from boardstream.joins.topics import Deployed
from boardstream.pipelines import shipped
from boardstream.reconcile.evidence.expectations import (
    ExpectationOutcome,
    Subject,
    ValidationReport,
    validate_reconciliation,
)
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import Settings

SUBJECT = Subject.of(ReconcileTarget.shipped(Settings()))
TABLE = SUBJECT.table

ROW_COUNT = "expect_table_row_count_to_equal"
UNIQUE_BOARD = "expect_column_values_to_be_unique(board_id)"
BOARD_NOT_NULL = "expect_column_values_to_not_be_null(board_id)"
MEMBER_NOT_NULL = "expect_column_values_to_not_be_null(member_id)"
DIFFERENCES = ("missing", "extra", "duplicates", "mismatched")


def _table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "board_id": ["b1", "b2", "b3", "b4", "b5"],
            "member_id": ["m1", "m1", "m2", "m3", "m3"],
            "title": ["a", "b", "c", "d", "e"],
        }
    )


def _differences(**non_empty: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every difference set empty (one with no columns at all) unless given."""
    empty = {name: pd.DataFrame({"board_id": pd.Series(dtype=object)}) for name in DIFFERENCES}
    empty["mismatched"] = pd.DataFrame()
    return {**empty, **non_empty}


def _run(
    tmp_path: Path, table: pd.DataFrame, expected_rows: int, **non_empty: pd.DataFrame
) -> ValidationReport:
    return validate_reconciliation(
        SUBJECT,
        table,
        expected_rows,
        _differences(**non_empty),
        tmp_path / "docs",
        "run-under-test",
        keep_runs=1,
    )


def _failing(report: ValidationReport) -> set[tuple[str, str]]:
    return {(o.expectation, o.target) for o in report.outcomes if not o.success}


def _outcome(report: ValidationReport, expectation: str, target: str) -> ExpectationOutcome:
    (outcome,) = [o for o in report.outcomes if (o.expectation, o.target) == (expectation, target)]
    return outcome


def test_clean_data_passes_and_renders_docs(tmp_path: Path) -> None:
    report = _run(tmp_path, _table(), 5)

    assert report.success
    assert {(o.expectation, o.target) for o in report.outcomes} == {
        (ROW_COUNT, TABLE),
        (UNIQUE_BOARD, TABLE),
        (BOARD_NOT_NULL, TABLE),
        (MEMBER_NOT_NULL, TABLE),
        *((ROW_COUNT, name) for name in DIFFERENCES),
    }
    assert all(o.success for o in report.outcomes)
    assert _outcome(report, ROW_COUNT, TABLE).observed == "5"
    assert _outcome(report, ROW_COUNT, "mismatched").observed == "0"

    site = tmp_path / "docs" / "run-under-test"
    assert report.data_docs_index == site / "index.html"
    assert report.data_docs_index.is_file()
    assert "run-under-test" in report.data_docs_index.read_text()
    pages = list((site / "validations").rglob("*.html"))
    assert len(pages) == 1 + len(DIFFERENCES)
    assert all("run-under-test" in page.parts for page in pages)


# What a page loads: scripts, stylesheets, images (links to click are not loaded).
LOADED = re.compile(r'<(?:script|link|img)\b[^>]*\b(?:src|href)="([^"#]+)"')


def test_data_docs_load_nothing_from_the_internet(tmp_path: Path) -> None:
    """Every script, stylesheet and image a page loads is a file of the run's own site."""
    site = _run(tmp_path, _table(), 5).data_docs_index.parent
    pages = [page for page in site.rglob("*.html") if "static" not in page.parts]
    assert len(pages) == 1 + 2 * (1 + len(DIFFERENCES))  # index, suites, validations
    loaded = {
        (page.parent / url).resolve() for page in pages for url in LOADED.findall(page.read_text())
    }
    assert {path for path in loaded if not path.is_file()} == set()
    assert all(path.is_relative_to(site) for path in loaded)
    vendor = site / "static" / "vendor"
    vendored = {p.relative_to(vendor).as_posix() for p in loaded if p.is_relative_to(vendor)}
    assert vendored >= {
        "bootstrap/bootstrap.min.css",
        "jquery/jquery.min.js",
        "bootstrap-table/bootstrap-table.min.js",
        "fontawesome/css/all.min.css",
    }
    css = (site / "static/vendor/fontawesome/css/all.min.css").read_text()
    fonts = {
        site / "static/vendor/fontawesome/css" / url
        for url in re.findall(r"url\((../webfonts/[^)]+\.woff2)\)", css)
    }
    assert fonts and all(font.is_file() for font in fonts)


def test_each_run_keeps_its_own_site_up_to_the_retention(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    for run in ("reconciliation-1", "reconciliation-2", "reconciliation-3"):
        validate_reconciliation(SUBJECT, _table(), 5, _differences(), docs, run, keep_runs=2)
    assert sorted(path.name for path in docs.iterdir()) == ["reconciliation-2", "reconciliation-3"]
    validations = docs / "reconciliation-2" / "validations" / "reconcile" / "board_detail"
    assert [path.name for path in validations.iterdir()] == ["reconciliation-2"]


def test_wrong_expected_row_count_fails_only_the_row_count(tmp_path: Path) -> None:
    report = _run(tmp_path, _table(), 6)

    assert not report.success
    assert _failing(report) == {(ROW_COUNT, TABLE)}
    assert _outcome(report, ROW_COUNT, TABLE).observed == "5"


def test_duplicate_board_and_null_member_fail_their_checks(tmp_path: Path) -> None:
    table = _table()
    table.loc[4, "board_id"] = "b1"
    table.loc[2, "member_id"] = None

    report = _run(tmp_path, table, 5)

    assert not report.success
    assert _failing(report) == {(UNIQUE_BOARD, TABLE), (MEMBER_NOT_NULL, TABLE)}
    assert _outcome(report, UNIQUE_BOARD, TABLE).observed == "2 unexpected"
    assert _outcome(report, MEMBER_NOT_NULL, TABLE).observed == "1 unexpected"


def test_non_empty_difference_set_fails_only_itself(tmp_path: Path) -> None:
    missing = pd.DataFrame({"board_id": ["b6", "b7"], "member_id": ["m4", "m4"]})

    report = _run(tmp_path, _table(), 5, missing=missing)

    assert not report.success
    assert _failing(report) == {(ROW_COUNT, "missing")}
    assert _outcome(report, ROW_COUNT, "missing").observed == "2"


def test_difference_set_may_not_shadow_the_table(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="board_detail"):
        validate_reconciliation(
            SUBJECT, _table(), 5, {TABLE: pd.DataFrame()}, tmp_path, "clash", keep_runs=1
        )


def _table_page(report: ValidationReport, table: str = TABLE) -> str:
    site = report.data_docs_index.parent
    (page,) = (site / "validations" / "reconcile" / table).rglob("*.html")
    return page.read_text()


def test_an_incremental_run_says_its_rows_are_not_the_whole_table(tmp_path: Path) -> None:
    """Issue #48: an incremental run's Data Docs said "board_detail must have exactly 0 rows.
    Observed 0" and "NaN% not null" while the table held thousands of rows."""
    empty = _table().iloc[0:0]
    report = validate_reconciliation(
        SUBJECT, empty, 0, _differences(), tmp_path / "a", "run-a", keep_runs=1, rechecked_boards=0
    )
    page = _table_page(report)
    assert "the 0 rows of board_detail of the 0 boards this incremental run re-checked" in page
    assert "exactly 0 rows" not in page and "NaN" not in page
    assert [o.expectation for o in report.outcomes if o.target == TABLE] == [ROW_COUNT]

    report = validate_reconciliation(
        SUBJECT,
        _table(),
        5,
        _differences(),
        tmp_path / "b",
        "run-b",
        keep_runs=1,
        rechecked_boards=4,
    )
    page = _table_page(report)
    assert "the 5 rows of board_detail of the 4 boards this incremental run re-checked" in page
    assert "exactly 5, as their records call for" in page
    assert "board_id unique among the 5 rows" in page
    assert len([o for o in report.outcomes if o.target == TABLE]) == 4 and report.success


def test_a_full_run_states_the_rule_for_the_whole_table(tmp_path: Path) -> None:
    """The broken variant of the above: a full run's page has GX's own sentence, which names
    the whole table, and an empty table gives the NaN the incremental page leaves out."""
    report = _run(tmp_path, _table().iloc[0:0], 0)
    page = _table_page(report)
    assert "exactly" in page and "re-checked" not in page and "NaN" in page


def test_a_declared_pipelines_suite_names_its_own_table_and_columns(tmp_path: Path) -> None:
    """orders (issue #64): the suite checks order_customer's order_id and customer_id, read
    from the checks' role columns, and its Data Docs call the records orders."""
    orders = Subject.of(ReconcileTarget.of(Deployed.declared(shipped("orders"))))
    assert orders == Subject("order_customer", "order_id", "customer_id", "orders")
    rows = pd.DataFrame({"board_id": ["o1", "o1", "o2"], "member_id": ["c1", None, "c2"]})
    report = validate_reconciliation(
        orders, rows, 3, _differences(), tmp_path, "run-o", keep_runs=1, rechecked_boards=2
    )
    assert _failing(report) == {
        ("expect_column_values_to_be_unique(order_id)", "order_customer"),
        ("expect_column_values_to_not_be_null(customer_id)", "order_customer"),
    }
    page = _table_page(report, orders.table)
    assert "the 3 rows of order_customer of the 2 orders this incremental run re-checked" in page
