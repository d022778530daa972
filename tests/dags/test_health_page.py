"""The "Pipeline health" page on a real Airflow API server, in headless Chromium (Debian's):
logged in through Airflow's own login form, the page shows exactly what the reconciliation
ledger holds; anonymous calls to its API are refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from boardstream import database
from boardstream.reconcile import ledger
from boardstream.reconcile.run import reconcile_once
from boardstream.settings import PROJECT_ROOT
from tests.fixtures import free_port
from tests.integration.pipeline import Pipeline

ARTIFACTS = PROJECT_ROOT / "test-artifacts"
USER, PASSWORD = "admin", "pipeline-health-test"
RUN_BY = "airflow:reconciliation/manual__test/reconcile"


@pytest.fixture
def api_server(loaded_pipeline: Pipeline, airflow_home: Path) -> Iterator[str]:
    """``airflow api-server`` with the simple auth manager and one known user; its base URL."""
    passwords = airflow_home / "passwords.json"
    passwords.write_text(json.dumps({USER: PASSWORD}))
    port = free_port()
    env = {
        **os.environ,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
    }
    log = (airflow_home / "api-server.log").open("w")
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "airflow"), "api-server", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://localhost:{port}"
    try:
        deadline = time.monotonic() + 180
        while _status(f"{base}/api/v2/monitor/health") != 200:
            assert server.poll() is None, (airflow_home / "api-server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "api-server did not come up in 180 s"
            time.sleep(1)
        yield base
    finally:
        server.terminate()
        server.wait(30)
        log.close()


def _status(url: str, token: str | None = None) -> int:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


@pytest.fixture
def browser() -> Iterator:
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument("--window-size=1500,1000")
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    yield driver
    driver.quit()


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
        assert _status(f"{api_server}/{path}") == 401, path
        assert _status(f"{api_server}/{path}", token="not-a-token") == 403, path

    wait = WebDriverWait(browser, 60)
    browser.get(f"{api_server}/auth/login?next=%2Fplugin%2Fpipeline-health")
    wait.until(ec.presence_of_element_located((By.NAME, "username"))).send_keys(USER)
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
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
    assert shown["source"] == 6 and shown["joined"] == 6
    lost = browser.find_element(
        By.CSS_SELECTOR, f"tr[data-run='{failed.run_id}'] [data-ids=missing_in_table]"
    )
    assert lost.text == "missing_in_table (1): r3"
    series = browser.find_elements(By.CSS_SELECTOR, "#chart polyline[data-series]")
    assert [line.get_attribute("data-series") for line in series] == [
        "source",
        "joined",
        "unmatched",
        "dead_lettered",
    ]
    queries = browser.find_elements(By.CSS_SELECTOR, "table#streams tr[data-query]")
    assert {q.get_attribute("data-query") for q in queries} == {
        "board-detail-join",
        "board-detail-sink",
    }

    browser.switch_to.default_content()
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "pipeline-health.png"))

    browser.get(f"{api_server}/boardstream/data-docs/index.html")
    assert "Data Docs" in browser.title or "Great Expectations" in browser.page_source
