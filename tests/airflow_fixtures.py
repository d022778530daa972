"""Real Airflow for tests (a plugin of tests/conftest.py, so every suite can use it): a
throwaway Airflow home (SQLite metadata database, this repo's dags/ and plugins/), the settings
exported as a deployment configures them, an ``airflow api-server`` and a headless Chromium.

Airflow reads its configuration when first imported, so the environment is set here, before
any test module imports it; no test module imports Airflow at its top.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardstream.settings import PROJECT_ROOT, Settings
from boardstream.stack.airflow import airflow_connections
from tests.fixtures import free_port

DAGS, PLUGINS = PROJECT_ROOT / "dags", PROJECT_ROOT / "plugins"
USER, PASSWORD = "admin", "pipeline-health-test"  # the api_server's one user
ARTIFACTS = PROJECT_ROOT / "test-artifacts"  # screenshots CI keeps


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("airflow-home")
    os.environ.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(PLUGINS),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        }
    )
    airflow = Path(sys.executable).parent / "airflow"
    migrate = subprocess.run(
        [str(airflow), "db", "migrate"], capture_output=True, text=True, timeout=300, check=False
    )
    assert migrate.returncode == 0, migrate.stdout[-2000:] + migrate.stderr[-2000:]
    sys.path.insert(0, str(PLUGINS))  # as Airflow does for the plugins folder
    yield home
    sys.path.remove(str(PLUGINS))


@pytest.fixture(scope="session")
def dagbag(airflow_home: Path):
    """Built once: parsing every DAG file is the slow part."""
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=DAGS)


def export_settings(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    """Let the DAGs' tasks, and the spark-submit jobs they start, see ``settings``: every field
    as its BOARDSTREAM_ env var, the Kafka cluster as the ``kafka_default`` connection and the
    Spark master as ``spark_default``, as setup configures them for a real deployment."""
    resolved = settings.model_copy(
        update={"jar_cache": settings.jars_dir, "database_url": settings.database}
    )
    for name, value in resolved.to_env().items():
        monkeypatch.setenv(name, value)
    for name, value in airflow_connections(settings).items():
        monkeypatch.setenv(name, value)


def run_dag(dag_file: str, dag_id: str, **params: object) -> str:
    """``dag.test()`` of one DAG file, parsed afresh; the run's state."""
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=DAGS / dag_file).get_dag(dag_id)
    return dag.test(run_conf=params or None).state


@pytest.fixture
def api_server(airflow_home: Path) -> Iterator[str]:
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
        while http_status(f"{base}/api/v2/monitor/health") != 200:
            assert server.poll() is None, (airflow_home / "api-server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "api-server did not come up in 180 s"
            time.sleep(1)
        yield base
    finally:
        server.terminate()
        server.wait(30)
        log.close()


def http_status(url: str, token: str | None = None) -> int:
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
    # A laptop's width: the pages must fit it without scrolling sideways.
    options.add_argument("--window-size=1280,1000")
    # Every request the page makes (DevTools' Network events) and its console, for assertions.
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    yield driver
    driver.quit()


def requested_urls(browser) -> list[str]:
    """The URLs the browser requested since the last call (the log is drained as it is read)."""
    events = (json.loads(entry["message"])["message"] for entry in browser.get_log("performance"))
    return [
        event["params"]["request"]["url"]
        for event in events
        if event["method"] == "Network.requestWillBeSent"
    ]


def login(browser, base: str, next_path: str, user: str = USER, password: str = PASSWORD) -> None:
    """Through Airflow's own login form, as the api_server's user (or ``user``), landing on
    ``next_path``."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{base}/auth/login?next={urllib.parse.quote(next_path, safe='')}")
    field = WebDriverWait(browser, 60).until(ec.presence_of_element_located((By.NAME, "username")))
    field.send_keys(user)
    browser.find_element(By.NAME, "password").send_keys(password)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()


def api_token(base: str) -> str:
    """A REST API token for the api_server's user (the simple auth manager's /auth/token)."""
    request = urllib.request.Request(
        f"{base}/auth/token",
        data=json.dumps({"username": USER, "password": PASSWORD}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["access_token"]


def api_get(url: str, token: str) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read().decode()


def assert_data_docs_offline(
    browser, api_server: str, site: Path, targets: set[str], screenshots: str
) -> None:
    """A run's own Data Docs ``site`` through the plugin: its index lists exactly its
    validations of ``targets`` (bootstrap-table, run locally, fills the list in), a validation
    page is styled by the vendored Bootstrap and Font Awesome, and no request leaves this
    machine. Screenshots ``<screenshots>-index.png`` and ``-validation.png``."""
    from selenium.common.exceptions import (
        NoSuchElementException,
        StaleElementReferenceException,
    )
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from boardstream.reconcile.evidence.expectations import Subject
    from boardstream.reconcile.target import ReconcileTarget

    table = Subject.of(ReconcileTarget.shipped(Settings())).table

    base = f"{api_server}/boardstream/data-docs/{site.name}"
    requested_urls(browser)  # drop what the login and the health page requested
    browser.get(f"{base}/index.html")
    results = "#section-1-content-block-2-1-body-table tbody tr"
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
    assert browser.save_screenshot(str(ARTIFACTS / f"{screenshots}-index.png"))

    (page,) = (site / "validations").rglob(f"*-{table}.html")
    browser.get(f"{base}/{page.relative_to(site).as_posix()}")
    style = browser.execute_script(
        "return [getComputedStyle(document.querySelector('nav.navbar')).display,"
        " getComputedStyle(document.querySelector('.fas'), '::before').fontFamily]"
    )
    assert style == ["flex", '"Font Awesome 6 Free"']
    assert browser.save_screenshot(str(ARTIFACTS / f"{screenshots}-validation.png"))

    urls = requested_urls(browser)
    assert any(url.endswith("/static/vendor/bootstrap/bootstrap.min.css") for url in urls)
    assert [url for url in urls if not url.startswith((f"{api_server}/", "data:"))] == []
    assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []
