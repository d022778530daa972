"""Authenticated Kafka: a local broker that requires SCRAM-SHA-512. With the right credentials
the CLI, the generator and the Spark join all work; a wrong password fails fast with an
authentication error; the password appears in no output or log."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from boardstream.settings import Settings
from boardstream.stack.kafka_broker import KafkaBroker
from tests.airflow_fixtures import ARTIFACTS, DAGS, api_get, api_token, export_settings, login
from tests.fixtures import cli, isolated_settings, world_readable_dir
from tests.pipeline import consume_all


def secured_broker(prefix: str, protocol: str, **tls: Path) -> Iterator[Settings]:
    var_dir = world_readable_dir(prefix)
    settings = isolated_settings(
        var_dir,
        security_protocol=protocol,
        sasl_username="boardstream",
        sasl_password=secrets.token_hex(16),  # made here, kept nowhere but the broker's var dir
        **{name: var_dir / path for name, path in tls.items()},
    )
    broker = KafkaBroker(settings)
    broker.start()
    yield settings
    broker.process.stop()
    shutil.rmtree(var_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def scram() -> Iterator[Settings]:
    yield from secured_broker("boardstream-scram-", "SASL_PLAINTEXT")


@pytest.fixture(scope="module")
def scram_tls() -> Iterator[Settings]:
    """SCRAM over TLS; clients trust the certificate the local broker made for itself."""
    yield from secured_broker(
        "boardstream-tls-", "SASL_SSL", ssl_ca_location=Path("kafka/tls/broker.pem")
    )


def run(settings: Settings, *args: str, timeout: float = 120, **env: str):
    return cli(settings, *args, timeout=timeout, extra_env={**settings.kafka_env(), **env})


def logs(var_dir: Path) -> str:
    return "\n".join(
        path.read_text(errors="replace")
        for path in var_dir.rglob("*")
        if path.is_file()
        and path.suffix in (".log", ".jsonl", ".json")
        and "kafka/data" not in str(path)
    )


# Over SCRAM without TLS the pipeline also runs in test_no_secret_in_task_logs_or_the_airflow_ui,
# under Airflow: CI runs this form over SCRAM and TLS only.
@pytest.mark.parametrize("secured", [pytest.param("scram", marks=pytest.mark.long), "scram_tls"])
def test_right_credentials_run_the_pipeline(secured: str, request) -> None:
    scram: Settings = request.getfixturevalue(secured)
    password = scram.sasl_password.get_secret_value()
    outputs = [run(scram, "topics", "create")]
    outputs.append(run(scram, "produce", "--members", "40", "--boards", "60", "--seed", "7"))
    outputs.append(run(scram, "job", "run", "board-detail-join", timeout=600))
    for done in outputs:
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    boards = {key.decode() for key, _ in consume_all(scram, scram.board_topic)}
    detail = {key.decode() for key, _ in consume_all(scram, scram.board_detail_topic)}
    assert len(boards) == 60 and detail == boards
    for done in outputs:
        assert password not in done.stdout + done.stderr
    assert password not in logs(scram.var_dir), "a log holds the SASL password"


def test_wrong_password_fails_with_an_authentication_error(scram: Settings) -> None:
    wrong = "wrong-" + secrets.token_hex(4)
    done = run(scram, "topics", "describe", BOARDSTREAM_SASL_PASSWORD=wrong)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "authentication failed" in done.stderr.lower(), done.stderr
    assert "boardstream" in done.stderr  # names the user, not the password
    assert wrong not in done.stdout + done.stderr
    assert scram.sasl_password.get_secret_value() not in done.stdout + done.stderr


def test_no_credentials_is_a_settings_error(scram: Settings) -> None:
    done = run(scram, "topics", "describe", BOARDSTREAM_SASL_PASSWORD="")
    assert done.returncode != 0
    assert "needs BOARDSTREAM_SASL_USERNAME and BOARDSTREAM_SASL_PASSWORD" in done.stderr


def test_no_secret_in_task_logs_or_the_airflow_ui(
    scram: Settings, api_server: str, browser, monkeypatch
) -> None:
    """The pipeline DAG against the SCRAM broker, run by Airflow's LocalExecutor (task logs
    written as in production), with ``kafka_default`` also stored in the metadata database as
    a deployment would: the run succeeds, and neither the task logs, the task and connection
    pages a logged-in user sees, nor the REST API behind them show the password."""
    from airflow.dag_processing.dagbag import DagBag
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    password = scram.sasl_password.get_secret_value()
    assert run(scram, "topics", "create").returncode == 0
    assert run(scram, "produce", "--members", "20", "--boards", "30", "--seed", "9").returncode == 0
    export_settings(monkeypatch, scram)
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTION_API_SERVER_URL", f"{api_server}/execution/")
    airflow = str(Path(sys.executable).parent / "airflow")
    stored = subprocess.run(
        [airflow, "connections", "add", "kafka_default", "--conn-json",
         os.environ["AIRFLOW_CONN_KAFKA_DEFAULT"]],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert stored.returncode == 0, stored.stdout + stored.stderr
    assert password not in stored.stdout + stored.stderr

    dag = DagBag(dag_folder=DAGS / "board_detail_pipeline.py").get_dag("board_detail_pipeline")
    dag_run = dag.test(use_executor=True)
    assert dag_run.state == "success"

    token = api_token(api_server)
    runs = f"{api_server}/api/v2/dags/board_detail_pipeline/dagRuns/{quote(dag_run.run_id, '')}"
    join_log = api_get(f"{runs}/taskInstances/join/logs/1?full_content=true", token)
    # 30 boards and 20 members, and the run's tick (see boardstream/joins/job.py).
    assert re.search(r"board-detail-join batch \d+: 51 rows", join_log), join_log[-3000:]
    api_pages = {
        "join log": join_log,
        "sink log": api_get(f"{runs}/taskInstances/sink/logs/1?full_content=true", token),
        "task instances": api_get(f"{runs}/taskInstances", token),
        "connection": api_get(f"{api_server}/api/v2/connections/kafka_default", token),
    }
    assert json.loads(api_pages["connection"])["extra"].count('"sasl.password": "***"') == 1
    for name, body in api_pages.items():
        assert password not in body, f"the password shows in the API's {name}"

    login(browser, api_server, f"/dags/board_detail_pipeline/runs/{dag_run.run_id}/tasks/join")
    # Once, under a loaded CI run, the page had not shown the log after 60 s, though the API
    # served it (asserted above); the cause is not known. A reload asks for the page again.
    for _ in range(4):
        try:
            WebDriverWait(browser, 45).until(lambda b: "board-detail-join batch" in b.page_source)
            break
        except TimeoutException:
            browser.refresh()
    else:
        raise AssertionError("the join's task page never showed its log")
    wait = WebDriverWait(browser, 60)
    assert password not in browser.page_source
    browser.find_element(By.XPATH, tab("Rendered Templates")).click()
    wait.until(lambda b: "application_args" in b.page_source)
    assert password not in browser.page_source
    browser.get(f"{api_server}/connections")
    wait.until(lambda b: "kafka_default" in b.page_source)
    browser.find_element(By.CSS_SELECTOR, "[aria-label='Edit Connection']").click()
    wait.until(lambda b: b.find_elements(By.XPATH, tab("Extra Fields JSON")))
    browser.find_element(By.XPATH, tab("Extra Fields JSON")).click()
    wait.until(lambda b: "sasl.username" in b.page_source and '"***"' in b.page_source)
    assert password not in browser.page_source
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "kafka-connection-masked.png"))


def test_an_untrusted_broker_certificate_fails_fast_naming_tls(
    scram_tls: Settings, tmp_path
) -> None:
    """A client whose CA file is not the one that signed the broker's certificate (here: the
    certificate of another local broker) stops at the TLS handshake, saying so."""
    other = KafkaBroker(isolated_settings(tmp_path, security_protocol="SSL")).tls
    other.ensure()
    done = run(scram_tls, "topics", "describe", BOARDSTREAM_SSL_CA_LOCATION=str(other.certificate))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "tls handshake" in done.stderr.lower(), done.stderr
    assert "BOARDSTREAM_SSL_CA_LOCATION" in done.stderr
    assert scram_tls.sasl_password.get_secret_value() not in done.stdout + done.stderr


def tab(label: str) -> str:
    """XPath of the Airflow UI element (tab, accordion) labelled ``label``."""
    return f"//*[normalize-space(text())='{label}']"
