"""The "Pipeline health" page on a real Airflow API server, in headless Chromium (Debian's):
logged in through Airflow's own login form, the page shows exactly what the reconciliation
ledger holds; anonymous calls to its API are refused."""

from __future__ import annotations

import sqlalchemy as sa

from boardstream import database
from boardstream.reconcile import ledger
from boardstream.reconcile.run import reconcile_once
from tests.airflow_fixtures import ARTIFACTS, assert_data_docs_offline, http_status, login
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

    site = failed.validation.data_docs_index.parent
    targets = {outcome.target for outcome in failed.validation.outcomes}  # one validation each
    assert_data_docs_offline(browser, api_server, site, targets, "data-docs")
