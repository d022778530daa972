"""The "Pipeline health" page as a user reaches it, in headless Chromium logged in through
Airflow's form: its screenshot shows the page renders from the containers' data, not only that
the API answers."""

from __future__ import annotations

import shutil
import time
import urllib.request

from boardstream.entrypoints.compose.commands import log
from boardstream.entrypoints.compose.env_file import airflow_url
from boardstream.entrypoints.compose.report import ARTIFACTS
from boardstream.settings import PROJECT_ROOT


def screenshot(env: dict[str, str]) -> str:
    """The screenshot's path in the checkout; ``env``: the run's ``.env``."""
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(
        options=options, service=webdriver.ChromeService(shutil.which("chromedriver"))
    )
    try:
        base = airflow_url(env)
        driver.get(
            f"{base}/auth/login?next={urllib.request.quote('/plugin/pipeline-health', safe='')}"
        )
        field_ = WebDriverWait(driver, 60).until(
            ec.presence_of_element_located((By.NAME, "username"))
        )
        field_.send_keys(env["AIRFLOW_ADMIN_USER"])
        driver.find_element(By.NAME, "password").send_keys(env["AIRFLOW_ADMIN_PASSWORD"])
        driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        WebDriverWait(driver, 60).until(lambda d: "pipeline-health" in d.current_url)
        WebDriverWait(driver, 60).until(lambda d: "Pipeline health" in d.page_source)
        time.sleep(5)  # the page's data and its iframe
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / "compose-pipeline-health.png"
        driver.save_screenshot(str(path))
        log(f"screenshot: {path}")
        return str(path.relative_to(PROJECT_ROOT))
    finally:
        driver.quit()
