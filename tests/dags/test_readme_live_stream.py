"""The README's live stream, followed as a new user would on a fresh clone of this commit: its
commands run word for word (with free ports instead of the defaults, so another stack on this
machine is left alone), the DAG unpaused through Airflow's REST API as the UI does it, with this
machine's cores and every other setting at its default. Then:

1. boards at 1,000/s for 5 minutes (``bench/stream_latency.py --attach``) must all reach
   ``board_detail``; the latency (board timestamp to row) goes to
   ``test-artifacts/readme-live-stream.txt``, the figure the README states;
2. the sink is starved on purpose: the worker restarted with 2 cores, which the join, first
   to register, takes; the page's API must call the sink unhealthy and the watch must fail,
   both within the SLO's bound, and the page is captured
   (``test-artifacts/readme-live-stream-breach.png``);
3. the worker given its cores back, the streams stopped on request, and a reconciliation
   PASSED: nothing lost on the way.

It clones the committed HEAD: uncommitted changes are not what it runs. About 10 minutes."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.airflow_fixtures import ARTIFACTS, login
from tests.fixtures import LATENCY_ROW, fresh_clone

pytestmark = pytest.mark.long

JOIN, SINK = "board-detail-join", "board-detail-sink"


@dataclass
class Clone:
    root: Path
    env: dict[str, str]
    log: list[str]

    def run(self, command: str, timeout_s: float = 900, **env: str) -> str:
        """``command`` through bash in the clone, as typed; its output, logged with its wall
        time. A non-zero exit fails the test with the output's end."""
        began = time.monotonic()
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=self.root,
            env=self.env | env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        output = done.stdout + done.stderr
        self.note(f"$ {command}  ({time.monotonic() - began:.1f} s, exit {done.returncode})")
        assert done.returncode == 0, f"{command} exited {done.returncode}:\n{output[-4000:]}"
        return output

    def note(self, line: str) -> None:
        print(line, flush=True)
        self.log.append(line)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clone]:
    root, env = fresh_clone(
        tmp_path_factory.mktemp("readme"),
        "BOARDSTREAM_SPARK_MASTER_PORT",
        "BOARDSTREAM_SPARK_MASTER_UI_PORT",
        "BOARDSTREAM_SPARK_WORKER_UI_PORT",
    )
    found = Clone(root, env, [])
    yield found
    subprocess.run(["bin/down"], cwd=root, env=env, capture_output=True, timeout=300, check=False)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "readme-live-stream.txt").write_text("\n".join(found.log) + "\n")


def readme_commands(readme: str, master_port: str) -> list[str]:
    """The commands of the README's live-stream section, its own master port swapped for the
    test's."""
    section = readme.split("## The live stream", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in block.splitlines() if line and not line.startswith("#")]
    assert commands, "the README's live-stream section has no command"
    return [command.replace(":7077", f":{master_port}") for command in commands]


class Airflow:
    """The clone's Airflow through its REST API, as the stack's user."""

    def __init__(self, clone: Clone) -> None:
        self.base = f"http://localhost:{clone.env['BOARDSTREAM_AIRFLOW_PORT']}"
        passwords = clone.root / "var" / "airflow" / "passwords.json"
        self.user, self.password = next(iter(json.loads(passwords.read_text()).items()))
        self.token: str | None = None
        token = self.call("POST", "/auth/token", {"username": self.user, "password": self.password})
        self.token = token["access_token"]

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(
            f"{self.base}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers=headers,
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response)

    def live(self) -> dict[str, dict[str, Any]]:
        """The page's verdict on each supervised stream."""
        return self.call("GET", "/boardstream/api/health")["live"]

    def failed_watches(self, since: str) -> list[str]:
        """The runs of board_detail_stream whose watch failed after ``since`` (ISO)."""
        runs = self.call(
            "GET", "/api/v2/dags/board_detail_stream/dagRuns?order_by=-run_after&limit=50"
        )["dag_runs"]
        failed = []
        for run in runs:
            if (run.get("end_date") or "9999") < since:
                continue
            path = f"/api/v2/dags/board_detail_stream/dagRuns/{run['dag_run_id']}/taskInstances"
            for ti in self.call("GET", path)["task_instances"]:
                ended = ti.get("end_date") or ""
                if ti["task_id"] == "watch" and ti["state"] == "failed" and ended >= since:
                    failed.append(run["dag_run_id"])
        return failed


def until(check: Callable[[], Any], what: str, timeout_s: float, poll_s: float = 2.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out after {timeout_s:.0f} s waiting for {what}"
        time.sleep(poll_s)


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())


@pytest.mark.timeout(3_600)  # setup, 5 minutes of load, a starving, a stop: about 10 minutes
def test_the_readme_live_stream_loads_every_board_and_breaches_when_starved(
    clone: Clone, browser
) -> None:
    clone.run("bin/setup", timeout_s=1500)
    readme = (clone.root / "README.md").read_text()
    for command in readme_commands(readme, clone.env["BOARDSTREAM_SPARK_MASTER_PORT"]):
        clone.note(clone.run(command).strip())
    airflow = Airflow(clone)
    # "in the Airflow UI: unpause board_detail_stream"
    airflow.call("PATCH", "/api/v2/dags/board_detail_stream", {"is_paused": False})
    began = time.monotonic()
    live = until(
        lambda: (
            (s := airflow.live()) and all(s.get(j, {}).get("running") for j in (JOIN, SINK)) and s
        ),
        "both streams running",
        timeout_s=900,
    )
    clone.note(f"both streams running {time.monotonic() - began:.0f} s after the unpause")

    master = f"spark://127.0.0.1:{clone.env['BOARDSTREAM_SPARK_MASTER_PORT']}"
    bench = clone.run(
        ".venv/bin/python bench/stream_latency.py --attach --rate 1000 --seconds 300",
        timeout_s=1500,
        BOARDSTREAM_SPARK_MASTER=master,
    )
    clone.note(bench.strip())
    [row] = LATENCY_ROW.finditer(bench)
    assert (row["sent"], row["missing"]) == ("300,000", "0"), row[0]
    live = airflow.live()
    assert [live[j]["healthy"] for j in (JOIN, SINK)] == [True, True], live

    # Starved: the worker comes back with 2 cores, the join (registered first) takes both.
    stop_worker = (
        ".venv/bin/python -c 'from boardstream.settings import Settings; "
        "from boardstream.stack.spark_cluster import SparkWorker; "
        "SparkWorker(Settings()).process.stop()'"
    )
    clone.run(stop_worker)
    clone.note(
        clone.run(
            ".venv/bin/boardstream stack up --spark-cluster", BOARDSTREAM_SPARK_WORKER_CORES="2"
        ).strip()
    )
    starved_at, since = time.monotonic(), now_iso()
    bound_s = 1200  # the batch-age SLO's default, the longest of the SLO's bounds
    sink = until(
        lambda: (s := airflow.live()[SINK]) and not s["healthy"] and s,
        "the page to call the sink unhealthy",
        timeout_s=bound_s,
    )
    clone.note(
        f"page: sink unhealthy {time.monotonic() - starved_at:.0f} s after the starving "
        f"restart: {sink['reasons']}"
    )
    assert any(reason.startswith("no executor") for reason in sink["reasons"]), sink
    failed = until(lambda: airflow.failed_watches(since), "a failed watch", timeout_s=bound_s)
    clone.note(f"watch failed {time.monotonic() - starved_at:.0f} s after it: runs {failed}")

    login(browser, airflow.base, "/plugin/pipeline-health", airflow.user, airflow.password)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.switch_to.frame(wait.until(ec.presence_of_element_located((By.TAG_NAME, "iframe"))))
    badge = wait.until(
        ec.presence_of_element_located(
            (By.CSS_SELECTOR, f"tr[data-query='{SINK}'] [data-field=live] .badge")
        )
    )
    assert "breaching" in badge.get_attribute("class").split(), badge.get_attribute("outerHTML")
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "readme-live-stream-breach.png"))

    # Its cores back, the sink resumes; stopped on request; nothing lost.
    clone.run(stop_worker)
    clone.run(".venv/bin/boardstream stack up --spark-cluster")
    until(lambda: airflow.live()[SINK]["healthy"], "the sink healthy again", timeout_s=600)
    airflow.call(
        "POST",
        "/api/v2/dags/board_detail_stream_request/dagRuns",
        {"logical_date": None, "conf": {"action": "stop"}},
    )
    until(
        lambda: not any(airflow.live()[j]["running"] for j in (JOIN, SINK)),
        "both streams stopped on request",
        timeout_s=600,
    )
    clone.note(clone.run(".venv/bin/boardstream reconcile --full", timeout_s=900).strip()[-2000:])
