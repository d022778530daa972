"""The "Pipeline health" page on a real Airflow API server, in headless Chromium (Debian's):
logged in through Airflow's own login form, the page shows exactly what the reconciliation
ledger holds; anonymous calls to its API are refused."""

from __future__ import annotations

import sqlalchemy as sa

from boardstream import database
from boardstream.reconcile import ledger
from boardstream.reconcile.expectations import TABLE
from boardstream.reconcile.run import RunResult, reconcile_once
from tests.airflow_fixtures import ARTIFACTS, http_status, login, requested_urls
from tests.pipeline import Pipeline

RUN_BY = "airflow:reconciliation/manual__test/reconcile"


def test_page_shows_the_ledger_and_refuses_anonymous_calls(
    loaded_pipeline: Pipeline, spark, api_server: str, browser
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    settings = loaded_pipeline.settings
    engine = database.engine(settings.database)
    passed = reconcile_once(spark, settings, RUN_BY)
    with engine.begin() as connection:
        connection.execute(sa.text("DELETE FROM board_detail WHERE board_id = 'r3'"))
    failed = reconcile_once(spark, settings, RUN_BY)
    assert (passed.passed, failed.passed) == (True, False)

    for path in ("boardstream/api/health", "boardstream/health", "boardstream/data-docs/"):
        assert http_status(f"{api_server}/{path}") == 401, path
        assert http_status(f"{api_server}/{path}", token="not-a-token") == 403, path

    wait = WebDriverWait(browser, 60)
    login(browser, api_server, "/plugin/pipeline-health")
    frame = wait.until(ec.presence_of_element_located((By.TAG_NAME, "iframe")))
    assert frame.get_attribute("src") == f"{api_server}/boardstream/health"
    browser.switch_to.frame(frame)
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "table#reconciliation-runs")))

    for result in (passed, failed):
        stored = ledger.run(engine, result.run_id)
        row = browser.find_element(By.CSS_SELECTOR, f"tr[data-run='{result.run_id}']")
        shown = {
            cell.get_attribute("data-count"): int(cell.text.replace(",", ""))
            for cell in row.find_elements(By.CSS_SELECTOR, "td[data-count]")
        }
        assert shown == {name: stored["counts"].get(name, 0) for name in shown}
        assert set(shown) >= {"source", "joined", "unmatched", "dead_lettered", "missing"}
        verdict = row.find_element(By.CSS_SELECTOR, "[data-field=verdict]").text
        assert verdict == ("PASSED" if stored["passed"] else "FAILED")
        log_link = row.find_element(By.LINK_TEXT, "task log").get_attribute("href")
        assert log_link == f"{api_server}/dags/reconciliation/runs/manual__test/tasks/reconcile"
        docs_link = row.find_element(By.LINK_TEXT, "Data Docs").get_attribute("href")
        assert docs_link == (
            f"{api_server}/boardstream/data-docs/reconciliation-{result.run_id}/index.html"
        )
    assert shown["source"] == 6 and shown["joined"] == 6
    lost = browser.find_element(
        By.CSS_SELECTOR, f"tr[data-run='{failed.run_id}'] [data-ids=missing_in_table]"
    )
    assert lost.text == "missing_in_table (1): r3"
    bars = browser.find_elements(By.CSS_SELECTOR, "#chart g[data-run]")
    assert [bar.get_attribute("data-run") for bar in bars] == [
        str(passed.run_id),
        str(failed.run_id),
    ]
    parts = bars[0].find_elements(By.CSS_SELECTOR, "rect[data-part]")
    assert [part.get_attribute("data-part") for part in parts] == [
        "not_yet_read",
        "joined",
        "unmatched",
        "dead_lettered",
        "pending",
    ]
    queries = browser.find_elements(By.CSS_SELECTOR, "table#streams tr[data-query]")
    assert {q.get_attribute("data-query") for q in queries} == {
        "board-detail-join",
        "board-detail-sink",
    }

    browser.switch_to.default_content()
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "pipeline-health.png"))

    _assert_data_docs_offline(browser, api_server, failed)


def _assert_data_docs_offline(browser, api_server: str, run: RunResult) -> None:
    """The run's own Data Docs through the plugin: its index lists exactly its validations
    (bootstrap-table, run locally, fills the list in), a validation page is styled by the
    vendored Bootstrap and Font Awesome, and no request leaves this machine."""
    from selenium.common.exceptions import (
        NoSuchElementException,
        StaleElementReferenceException,
    )
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    site = run.validation.data_docs_index.parent
    base = f"{api_server}/boardstream/data-docs/{site.name}"
    requested_urls(browser)  # drop what the login and the health page requested
    browser.get(f"{base}/index.html")
    results = "#section-1-content-block-2-1-body-table tbody tr"
    targets = {outcome.target for outcome in run.validation.outcomes}  # one validation each
    paged = f"Showing 1 to {min(10, len(targets))} of {len(targets)} rows"

    def is_paged(b) -> bool:
        try:
            return b.find_element(By.CSS_SELECTOR, ".pagination-info").text.strip() == paged
        except (NoSuchElementException, StaleElementReferenceException):
            return False  # not drawn yet, or redrawn under us

    WebDriverWait(browser, 60).until(is_paged)
    # Read in one script: bootstrap-table may redraw its rows, leaving found elements stale.
    cells = browser.execute_script(
        "return [...document.querySelectorAll(arguments[0])]"
        ".map(row => [...row.cells].map(cell => cell.innerText))",
        results,
    )
    assert {cell[2] for cell in cells} == {site.name}  # run name
    assert {cell[3] for cell in cells} <= targets and len(cells) == min(10, len(targets))
    assert browser.save_screenshot(str(ARTIFACTS / "data-docs-index.png"))

    (page,) = (site / "validations").rglob(f"*-{TABLE}.html")
    browser.get(f"{base}/{page.relative_to(site).as_posix()}")
    style = browser.execute_script(
        "return [getComputedStyle(document.querySelector('nav.navbar')).display,"
        " getComputedStyle(document.querySelector('.fas'), '::before').fontFamily]"
    )
    assert style == ["flex", '"Font Awesome 6 Free"']
    assert browser.save_screenshot(str(ARTIFACTS / "data-docs-validation.png"))

    urls = requested_urls(browser)
    assert any(url.endswith("/static/vendor/bootstrap/bootstrap.min.css") for url in urls)
    assert [url for url in urls if not url.startswith((f"{api_server}/", "data:"))] == []
    assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []
