"""The live stream under Airflow on the cluster of hosts (issue #50): Airflow on a host of its
own, its tasks run by an edge worker on each driver host, so the supervising DAG starts the
streams' drivers on whichever driver host took its task. Faults, each ending with ``reconcile
--full`` PASSED, nothing lost and no duplicate row, figures in ``test-artifacts/reliability.
jsonl``. One pipeline (the settings' topics, database and checkpoints, as the edge workers were
given them) carries the module's scenarios one after the other.

Minutes each, with Airflow's start: ``pytest --long tests/faults/cluster/test_cluster_airflow.py``.
"""

from __future__ import annotations

import time

import pytest

from boardstream import database
from boardstream.supervision import register
from boardstream.supervision.streams import StreamOptions, board_detail_streams
from tests.faults.cluster.cluster import DRIVERS, SPARK_MASTER_UI_PORT, Cluster
from tests.faults.cluster.scenarios import JOBS, SEED, host_of, loaded, streams_running, until
from tests.faults.harness import Scenario, backlog_options
from tests.store import RUNS

pytestmark = pytest.mark.long


def restarts(s: Scenario) -> int:
    """The streams' restarts so far, as the supervision counted them (the register)."""
    return sum(register.read(s.settings, job).restarts for job in JOBS)


def test_b_a_driver_hosts_death_restarts_its_drivers_on_the_other(
    airflow_cluster: Cluster, pipeline: Scenario
) -> None:
    """(b) kill -9 every process of the host running the drivers (and its edge worker): the
    watch fails once their leases expire, and the next supervise task, on the other driver
    host's edge worker, restarts them there from their checkpoints on HDFS."""
    s, options = pipeline, backlog_options(SEED + 1)
    s.name = "cluster: the drivers' host killed (under Airflow)"
    half, restarted = options.boards // 2, restarts(s)
    s.produce(options, part=slice(0, half))
    first = streams_running(s)
    victim = host_of(first[0].host)
    assert victim in DRIVERS and {d.host for d in first} == {first[0].host}, first
    until(lambda: s.batches("board-detail-sink") > 0, "a sink batch")

    assert airflow_cluster.hosts.kill(victim)
    killed = time.monotonic()
    s.faults += 1
    moved = streams_running(s, away_from=first[0].host)
    restart_s = time.monotonic() - killed
    assert {host_of(d.host) for d in moved} == set(DRIVERS) - {victim}
    s.produce(options, part=slice(half, None))
    recover_s = until(loaded(s), "every board loaded after the driver host's death", 900)
    s.restarts = restarts(s) - restarted
    assert s.restarts == 2, "each stream's start on the other host counted as a restart"
    s.assert_nothing_lost(recover_s, restart_s=round(restart_s, 1), killed_host=victim)


def checkpoint_entries(cluster: Cluster, s: Scenario) -> dict[str, int]:
    """Every offsets and commits entry of both streams' checkpoints: when each was written."""
    return {
        f"{stream.job}/{log}/{name}": at
        for stream in board_detail_streams(s.settings, StreamOptions())
        for log in ("offsets", "commits")
        for name, at in cluster.hdfs_files(f"{stream.checkpoint}/{log}").items()
        if name.isdigit()
    }


def test_c_a_driver_host_cut_off_commits_nothing_once_its_successor_holds_the_lease(
    airflow_cluster: Cluster, pipeline: Scenario
) -> None:
    """(c) cut the drivers' host off the network (its link down) while they run: they lose their
    leases and exit on their own before the TTL lets a successor in; the next supervise task
    starts successors on the other driver host; the host comes back. The checkpoints show no
    entry written from the cut until the successors held the leases, the old drivers were gone
    before then, and the topics hold nothing the verdict cannot account for."""
    s, options = pipeline, backlog_options(SEED + 2)
    s.name = "cluster: the drivers' host cut off, then back (under Airflow)"
    half, restarted = options.boards // 2, restarts(s)
    s.produce(options, part=slice(0, half))
    old = streams_running(s)
    victim = host_of(old[0].host)
    until(lambda: s.batches("board-detail-sink") > 0, "a sink batch")  # its table made
    until(loaded(s), "the first half loaded")
    before = checkpoint_entries(airflow_cluster, s)

    airflow_cluster.hosts.cut(victim)
    cut_ms = int(time.time() * 1000)
    s.faults += 1
    try:
        # One pid namespace: the tests see the cut-off host's processes end.
        pids = {d.pid for d in old}
        until(lambda: not pids & set(airflow_cluster.hosts.pids(victim)), "the old drivers' exit")
        gone_ms = int(time.time() * 1000)
        new = streams_running(s, away_from=old[0].host)
        taken_ms = min(d.since_ms for d in new)
        s.produce(options, part=slice(half, None))
        recover_s = until(loaded(s), "every board loaded after the cut", 900)
    finally:
        airflow_cluster.hosts.reconnect(victim)
    time.sleep(s.settings.lease_ttl_s)  # whatever the old host still had to say, said by now
    assert gone_ms <= taken_ms, "an old driver outlived its successor's taking"

    after = checkpoint_entries(airflow_cluster, s)
    assert {k: v for k, v in after.items() if k in before} == before  # nothing rewritten
    written = sorted((at, entry) for entry, at in after.items() if entry not in before)
    assert written and all(at >= taken_ms for at, _ in written), (cut_ms, taken_ms, written)
    assert {host_of(d.host) for d in new} == set(DRIVERS) - {victim}
    s.restarts = restarts(s) - restarted
    s.assert_nothing_lost(
        recover_s,
        cut_host=victim,
        old_drivers_gone_after_cut_s=round((gone_ms - cut_ms) / 1000, 1),
        successor_took_lease_after_cut_s=round((taken_ms - cut_ms) / 1000, 1),
    )


def test_d_a_namenode_restart_mid_stream_loses_nothing(
    airflow_cluster: Cluster, pipeline: Scenario
) -> None:
    """(d) stop HDFS (NameNode and DataNode) under the running streams and start it again: the
    streams wait for it (the client's retries) or fail and are restarted by the supervision;
    every board is loaded once."""
    s, options = pipeline, backlog_options(SEED + 3)
    s.name = "cluster: HDFS restarted under the streams (under Airflow)"
    half, restarted = options.boards // 2, restarts(s)
    s.produce(options, part=slice(0, half))
    streams_running(s)
    until(lambda: s.batches("board-detail-sink") > 0, "a sink batch")
    airflow_cluster.cli("hdfs", "stack", "down")
    stopped = time.monotonic()
    s.faults += 1
    s.produce(options, part=slice(half, None))
    time.sleep(15)  # the filesystem away for a while, the streams mid-batch
    airflow_cluster.cli("hdfs", "stack", "up", "--only", "namenode", "--only", "datanode")
    away_s = time.monotonic() - stopped
    recover_s = until(loaded(s), "every board loaded after HDFS came back", 900)
    streams_running(s)
    s.restarts = restarts(s) - restarted
    s.assert_nothing_lost(recover_s, hdfs_away_s=round(away_s, 1))


def test_the_health_page_on_the_airflow_host_shows_the_streams_and_a_runs_data_docs(
    airflow_cluster: Cluster, pipeline: Scenario, browser
) -> None:
    """The API server on the Airflow host serves the health page to a browser on another
    machine (the tests' namespace): both streams running, with their restarts and their
    applications' links on the Spark master's UI, and the Data Docs of a reconciliation an
    edge worker ran, read from the database (no host's files)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.airflow_fixtures import ARTIFACTS, login

    s = pipeline
    s.produce(backlog_options(SEED + 4))
    drivers = {d.job: d for d in streams_running(s)}
    until(loaded(s), "the boards loaded")
    api = airflow_cluster.airflow_api()
    api.wait_for_dag("reconciliation")
    api.unpause("reconciliation")  # a paused DAG's triggered run would wait
    run = api.trigger("reconciliation")
    assert api.wait("reconciliation", run, timeout_s=900) == "success"

    base = airflow_cluster.airflow_url
    wait = WebDriverWait(browser, 120)
    login(browser, base, "/plugin/pipeline-health", "admin", airflow_cluster.airflow_password())
    frame = wait.until(ec.presence_of_element_located((By.TAG_NAME, "iframe")))
    assert frame.get_attribute("src") == f"{base}/boardstream/health"
    browser.switch_to.frame(frame)
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "table#streams")))
    for job in JOBS:
        row = browser.find_element(By.CSS_SELECTOR, f"table#streams tr[data-query='{job}']")
        live = row.find_element(By.CSS_SELECTOR, "[data-field=live]")
        restarts = register.read(s.settings, job).restarts
        assert live.text.startswith("running "), live.text
        assert f"{restarts} restart" in live.text, live.text
        app = drivers[job].details["application_id"]
        link = live.find_element(By.LINK_TEXT, app).get_attribute("href")
        master_ui = f"http://{airflow_cluster.address('spark-master')}:{SPARK_MASTER_UI_PORT}"
        assert link == f"{master_ui}/app/?appId={app}"  # the application on the master's UI
    (row,) = browser.find_elements(By.CSS_SELECTOR, "tr[data-run]")
    stored = RUNS.run(database.engine(s.settings.database), int(row.get_attribute("data-run")))
    shown = {
        cell.get_attribute("data-count"): int(cell.text.replace(",", ""))
        for cell in row.find_elements(By.CSS_SELECTOR, "td[data-count]")
    }
    assert shown == {name: stored["counts"].get(name, 0) for name in shown}
    assert stored["passed"] and shown["joined"] > 0, stored["counts"]
    docs = row.find_element(By.LINK_TEXT, "Data Docs").get_attribute("href")
    ARTIFACTS.mkdir(exist_ok=True)
    browser.switch_to.default_content()
    assert browser.save_screenshot(str(ARTIFACTS / "cluster-pipeline-health.png"))
    browser.get(docs)
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".pagination-info")))
    assert browser.save_screenshot(str(ARTIFACTS / "cluster-data-docs.png"))
