"""The "Pipeline health" page on a real Airflow API server, in headless Chromium (Debian's):
logged in through Airflow's own login form, the page shows exactly what the reconciliation
ledger holds: the balance chart drawn by Chart.js with each run's counts (hovering a run shows
its time and counts), a passed run's findings as counts, a failed run's with ids; the streams'
last batch, age and lag against the SLO; anonymous calls to its API are refused."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from boardstream import database
from boardstream.durations import span
from boardstream.reconcile.evidence import run_ledger as ledger
from boardstream.reconcile.evidence.run_ledger import INCREMENTAL
from boardstream.reconcile.run import reconcile_once
from boardstream.spark.slo import batch_ended
from boardstream.stream_progress import ProgressStore
from tests.airflow_fixtures import (
    ARTIFACTS,
    assert_data_docs_offline,
    http_status,
    login,
    requested_urls,
)
from tests.pipeline import Pipeline
from tests.store import RUNS

RUN_BY = "airflow:reconciliation/manual__test/reconcile"
PARTS = ("not_yet_read", "joined", "unmatched", "dead_lettered", "pending", "missing")
# Two earlier runs, stored as reconcile_once stores them: one passed with boards in transit and a
# reported finding, one failed with a loss, so every part of the chart has a value.
EARLIER = [
    (
        True,
        {
            **{"source": 40, "read": 36, "not_yet_read": 4, "joined": 30, "unmatched": 3},
            **{"dead_lettered": 2, "pending": 1, "missing": 0, "conflicting": 0},
        },
        {"topic_replays": (2, ["e1", "e2"]), "pending": (1, ["e3"])},
    ),
    (
        False,
        {
            **{"source": 52, "read": 50, "not_yet_read": 2, "joined": 41, "unmatched": 4},
            **{"dead_lettered": 2, "pending": 0, "missing": 3, "conflicting": 0},
        },
        {"missing": (3, ["e4", "e5", "e6"])},
    ),
]
CHART = "Chart.getChart(document.getElementById('balance-chart'))"


def test_page_shows_the_ledger_and_refuses_anonymous_calls(
    loaded_pipeline: Pipeline, spark, api_server: str, browser
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    settings = loaded_pipeline.settings
    engine = database.engine(settings.database)
    earlier = []
    for verdict, counts, findings in EARLIER:
        earlier.append(RUNS.start_run(engine, {}, RUN_BY))
        RUNS.finish_run(engine, earlier[-1], verdict, counts, findings, None)
    # A third streaming job whose last batch ended two hours ago, 250 offsets behind.
    ended = datetime.now(UTC) - timedelta(hours=2)
    seeded = {
        "query": "board-table-count",
        "batch_id": 41,
        "timestamp": (ended - timedelta(milliseconds=1_500)).isoformat(),
        "batch_duration_ms": 1_500,
        "input_rows": 1_200,
        "processed_rows_per_s": 812.5,
        "max_offsets_behind_latest": 250,
        "state_rows": 17,
        "state_sst_bytes": 4_096,
    }
    ProgressStore(settings.database).append([seeded])
    passed = reconcile_once(spark, settings, RUN_BY)
    with engine.begin() as connection:
        connection.execute(sa.text("DELETE FROM board_detail WHERE board_id = 'r3'"))
    failed = reconcile_once(spark, settings, RUN_BY, kind=INCREMENTAL)
    assert (passed.passed, failed.passed) == (True, False)
    whole = {"table": "board_detail", "after": None, "through": None}
    assert (passed.table_slice, failed.table_slice) == ({**whole, "rows": 6}, {**whole, "rows": 5})

    paths = ("api/health", "health", "data-docs/", "static/chartjs/chart.umd.min.js")
    for path in (f"boardstream/{path}" for path in paths):
        assert http_status(f"{api_server}/{path}") == 401, path
        assert http_status(f"{api_server}/{path}", token="not-a-token") == 403, path

    wait = WebDriverWait(browser, 60)
    asked_at = time.time()
    login(browser, api_server, "/plugin/pipeline-health")
    frame = wait.until(ec.presence_of_element_located((By.TAG_NAME, "iframe")))
    assert frame.get_attribute("src") == f"{api_server}/boardstream/health"
    browser.switch_to.frame(frame)
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "table#reconciliation-runs")))
    loaded_at = time.time()

    for result in (passed, failed):
        stored = RUNS.run(engine, result.run_id)
        row = browser.find_element(By.CSS_SELECTOR, f"tr[data-run='{result.run_id}']")
        shown = {
            cell.get_attribute("data-count"): int(cell.text.replace(",", ""))
            for cell in row.find_elements(By.CSS_SELECTOR, "td[data-count]")
        }
        assert shown == {name: stored["counts"].get(name, 0) for name in shown}
        assert set(shown) >= {"source", "joined", "unmatched", "dead_lettered", "missing"}
        verdict = row.find_element(By.CSS_SELECTOR, "[data-field=verdict]").text
        assert verdict == ("PASSED" if stored["passed"] else "FAILED")
        # What a run read (offset lists) waits behind a disclosure, so the row stays one line.
        kind = row.find_element(By.CSS_SELECTOR, "[data-field=kind]")
        assert kind.text.split("\n") == [result.kind, "what it read"]
        kind.find_element(By.TAG_NAME, "summary").click()
        assert kind.text.split("\n") == [
            result.kind,
            "what it read",
            f"read {ledger.describe_covered(stored['covered'])}",
            f"looked at {ledger.describe_table_slice(stored['table_slice'])}",
        ]
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
    # A passed run's findings are counts; boards in transit are not findings.
    row = browser.find_element(By.CSS_SELECTOR, f"tr[data-run='{earlier[0]}']")
    assert [f.text for f in row.find_elements(By.CSS_SELECTOR, "[data-finding]")] == [
        "topic_replays (2)"
    ]
    assert [f.text for f in row.find_elements(By.CSS_SELECTOR, "[data-transit]")] == ["pending 1"]
    assert row.find_elements(By.CSS_SELECTOR, "[data-ids]") == [] and "e1" not in row.text
    row = browser.find_element(By.CSS_SELECTOR, f"tr[data-run='{earlier[1]}']")
    assert row.find_element(By.CSS_SELECTOR, "[data-ids=missing]").text == "missing (3): e4, e5, e6"

    # The balance chart, drawn by Chart.js: a run per bar, oldest first, a series per part.
    runs = [*earlier, passed.run_id, failed.run_id]
    recorded = [RUNS.run(engine, run_id) for run_id in runs]
    drawn = browser.execute_script(
        f"const chart = {CHART}; const x = chart.scales.x, y = chart.scales.y;"
        "return {labels: chart.data.labels, stacked: [x.options.stacked, y.options.stacked],"
        " axes: [x.options.title.text, y.options.title.text],"
        " datasets: chart.data.datasets.map(d => [d.label, d.data]),"
        " legend: chart.legend.legendItems.map(item => item.text)};"
    )
    assert drawn == {
        "labels": [str(run_id) for run_id in runs],
        "stacked": [True, True],
        "axes": ["reconciliation run", "source positions"],
        # A part of 0 is null: no bar, not a bar of minBarLength.
        "datasets": [[part, [run["counts"][part] or None for run in recorded]] for part in PARTS],
        # Each part's count in the newest run, readable however thin its bar.
        "legend": [f"{part} {recorded[-1]['counts'][part]:,}" for part in PARTS],
    }
    bar_floor = browser.execute_script(f"return {CHART}.data.datasets.map(d => d.minBarLength)")
    assert bar_floor == [4] * len(PARTS)
    joined_unmatched = [dataset[1] for dataset in drawn["datasets"][1:3]]
    assert joined_unmatched == [[30, 41, 6, 6], [3, 4, None, None]]
    lengths = browser.execute_script(
        f"const chart = {CHART};"
        "return chart.data.datasets.map((d, i) => chart.getDatasetMeta(i).data.map("
        " bar => Math.abs(bar.y - bar.base) || 0));"
    )
    drawn_parts = [
        [run_id for run_id, length in zip(runs, row, strict=True) if length > 0] for row in lengths
    ]
    counted = [
        [run_id for run_id, run in zip(runs, recorded, strict=True) if run["counts"][part]]
        for part in PARTS
    ]
    assert drawn_parts == counted

    # Hovering the failed earlier run's bar: its verdict, finish time and every part's count.
    finished = browser.find_element(
        By.CSS_SELECTOR, f"tr[data-run='{earlier[1]}'] [data-field=finished]"
    ).text
    assert finished == recorded[1]["finished_at"].strftime("%Y-%m-%d %H:%M:%S")
    canvas = browser.find_element(By.ID, "balance-chart")
    bar_x, bar_y, width, height = browser.execute_script(
        f"const bar = {CHART}.getDatasetMeta(1).data[1];"
        "return [bar.x, bar.y, arguments[0].clientWidth, arguments[0].clientHeight];",
        canvas,
    )
    ActionChains(browser).move_to_element_with_offset(
        canvas, int(bar_x - width / 2), int(bar_y - height / 2)
    ).perform()
    tooltip = browser.execute_script(
        f"const t = {CHART}.tooltip;"
        "return {shown: t.opacity, title: t.title, body: t.body.flatMap(b => b.lines),"
        " footer: t.footer};"
    )
    assert tooltip == {
        "shown": 1,
        "title": [f"run {earlier[1]} · FAILED", finished],
        "body": [
            "not_yet_read: 2",
            "joined: 41",
            "unmatched: 4",
            "dead_lettered: 2",
            "pending: 0",
            "missing: 3",
        ],
        "footer": ["source: 52"],
    }

    # Streams: each job's last batch, its age and lag against the SLO (20 minutes, 100,000).
    def ages(ended: datetime) -> set[str]:
        """The ages the page can show: it was rendered between asked_at and loaded_at."""
        since = ended.timestamp()
        return {span(age) for age in range(int(asked_at - since), int(loaded_at - since) + 1)}

    def stream(query: str) -> dict[str, str]:
        row = browser.find_element(By.CSS_SELECTOR, f"table#streams tr[data-query='{query}']")
        return {
            field: row.find_element(By.CSS_SELECTOR, f"[data-field={field}]").text
            for field in ("slo", "ended", "age", "rows-s", "lag")
        }

    queries = browser.find_elements(By.CSS_SELECTOR, "table#streams tr[data-query]")
    assert [q.get_attribute("data-query") for q in queries] == [
        "board-detail-join",
        "board-detail-sink",
        "board-table-count",
    ]
    for query in ("board-detail-join", "board-detail-sink"):
        latest = ProgressStore(settings.database).read(query)[-1]
        shown, ended_at = stream(query), batch_ended(latest)
        assert shown.pop("ended") == ended_at.strftime("%Y-%m-%d %H:%M:%S")
        assert shown.pop("age") in ages(ended_at)
        assert shown == {
            "slo": "OK",
            "rows-s": f"{latest['processed_rows_per_s']:,.1f}",
            "lag": f"{latest['max_offsets_behind_latest']:,}",
        }
    late = stream("board-table-count")
    assert late.pop("age") in ages(ended)
    assert late == {
        "slo": "breaching",
        "ended": ended.strftime("%Y-%m-%d %H:%M:%S"),
        "rows-s": "812.5",
        "lag": "250",
    }
    assert browser.find_element(By.ID, "stream-slo").text.startswith(
        "Each streaming job's newest batch against the SLO: it ended at most 20m ago and left"
        " at most 100,000 offsets behind the latest"
    )
    urls = requested_urls(browser)
    assert f"{api_server}/boardstream/static/chartjs/chart.umd.min.js" in urls
    local = (f"{api_server}/", f"blob:{api_server}/", "data:")  # blob: Airflow's own UI
    assert [url for url in urls if not url.startswith(local)] == []
    assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []

    # At 1,280 px (the browser's width) nothing scrolls sideways, in the page or in Airflow's
    # frame around it, and every run's evidence links are in view.
    widths = (
        "const d = document.documentElement; return [d.scrollWidth - d.clientWidth,"
        " ...Array.from(document.querySelectorAll('.scroll'), e => e.scrollWidth - e.clientWidth)]"
    )
    assert browser.execute_script("return window.outerWidth") == 1280
    assert browser.execute_script(widths) == [0, 0, 0]
    frame_width = browser.execute_script("return document.documentElement.clientWidth")
    links = browser.find_elements(By.CSS_SELECTOR, "td.links a")
    assert len(links) == 4 + 2  # each run's task log; the two reconciled here, Data Docs
    for link in links:
        right = browser.execute_script("return arguments[0].getBoundingClientRect().right", link)
        assert link.is_displayed() and right <= frame_width, link.text
    browser.switch_to.default_content()  # the tooltip still shown
    assert browser.execute_script(widths)[0] == 0

    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "pipeline-health.png"))
    browser.switch_to.frame(frame)
    browser.execute_script("document.getElementById('streams').scrollIntoView()")
    browser.switch_to.default_content()
    assert browser.save_screenshot(str(ARTIFACTS / "pipeline-health-streams.png"))

    site = failed.validation.data_docs_index.parent
    targets = {outcome.target for outcome in failed.validation.outcomes}  # one validation each
    assert_data_docs_offline(browser, api_server, site, targets, "data-docs")
