"""The Airflow REST client without an Airflow: requests (method, path, JSON body, the token
from the login) are checked at ``urlopen``; an HTTP error keeps its status and a network error
says the API is unreachable; and the waiting loops (DAG parsed, run finished, the Asset-queued
run) run on a fake clock, so their deadlines and retries are exact and cost no time.
``triggered_run``'s matching is pinned against Airflow's own model in tests/dags."""

from __future__ import annotations

import io
import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from boardstream.entrypoints import airflow_api
from boardstream.entrypoints.airflow_api import AirflowApi, AirflowApiError, AirflowUnreachableError
from boardstream.errors import BoardstreamError


class Response:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def read(self) -> bytes:
        return self.body


@pytest.fixture
def http(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Requests seen by urlopen; answers from ``answer(request)`` (the login by default)."""
    seen: dict[str, Any] = {"requests": [], "answer": lambda request: b"{}"}

    def urlopen(request: urllib.request.Request, timeout: float) -> Response:
        seen["requests"].append((request, timeout))
        if request.full_url.endswith("/auth/token"):
            return Response(b'{"access_token": "tok-1"}')
        answer = seen["answer"](request)
        if isinstance(answer, BaseException):
            raise answer
        return Response(answer)

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    return seen


def described(request: urllib.request.Request) -> tuple[str, str, Any, str | None]:
    body = json.loads(request.data) if request.data is not None else None
    return request.get_method(), request.full_url, body, request.get_header("Authorization")


def test_login_then_calls_carry_the_token(http) -> None:
    api = AirflowApi("http://localhost:8080/", "admin", "pw")
    http["answer"] = lambda request: b'{"is_paused": true}'
    assert api.is_paused("demo_data") is True
    api.unpause("demo_data")
    (login, login_timeout), (get, _), (patch, _) = http["requests"]
    assert described(login) == (
        "POST",
        "http://localhost:8080/auth/token",
        {"username": "admin", "password": "pw"},
        None,
    )
    assert login.get_header("Content-type") == "application/json"
    assert login_timeout == 30
    assert described(get) == (
        "GET",
        "http://localhost:8080/api/v2/dags/demo_data",
        None,
        "Bearer tok-1",
    )
    assert described(patch) == (
        "PATCH",
        "http://localhost:8080/api/v2/dags/demo_data",
        {"is_paused": False},
        "Bearer tok-1",
    )


def test_an_empty_answer_is_none(http) -> None:
    api = AirflowApi("http://af", "admin", "pw")
    http["answer"] = lambda request: b""
    assert api._call("PATCH", "/x", {}) is None


def test_an_http_error_keeps_its_status_and_a_short_detail(http) -> None:
    api = AirflowApi("http://af", "admin", "pw")
    detail = b'{"detail": "DAG not found"}' + b"x" * 600
    http["answer"] = lambda request: urllib.error.HTTPError(
        request.full_url, 404, "Not Found", {}, io.BytesIO(detail)
    )
    with pytest.raises(AirflowApiError) as failed:
        api.run("nope", "r1")
    assert failed.value.status == 404
    assert str(failed.value) == (
        f"Airflow API GET /api/v2/dags/nope/dagRuns/r1: 404 {detail[:500].decode()}"
    )


def test_no_answer_says_the_api_is_unreachable(http) -> None:
    api = AirflowApi("http://af", "admin", "pw")
    http["answer"] = lambda request: urllib.error.URLError("Connection refused")
    with pytest.raises(BoardstreamError) as failed:
        api.trigger("demo_data")
    assert not isinstance(failed.value, AirflowApiError)
    assert str(failed.value) == (
        "Airflow API at http://af unreachable: <urlopen error Connection refused>"
    )


class Clock:
    """time.monotonic and time.sleep for the module: sleeping advances it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if self.now > 7200:  # no test waits this long: a loop that never ends fails, not hangs
            raise AssertionError(f"still waiting after {self.now:.0f} s")


class Scripted(AirflowApi):
    """An API whose answers come from ``route(method, path, body)``; no login."""

    def __init__(self, route: Callable[[str, str, Any], Any]) -> None:
        self.base_url, self.token = "http://af", "t"
        self.route = route
        self.calls: list[tuple[str, str, Any]] = []

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        self.calls.append((method, path, body))
        answer = self.route(method, path, body)
        if isinstance(answer, BaseException):
            raise answer
        return answer


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(airflow_api, "time", fake)
    return fake


def test_trigger_posts_the_conf_and_returns_the_run_id() -> None:
    api = Scripted(lambda *_: {"dag_run_id": "manual__1"})
    assert api.trigger("demo_data", {"members": 5}) == "manual__1"
    assert api.trigger("demo_data") == "manual__1"
    assert api.calls == [
        ("POST", "/api/v2/dags/demo_data/dagRuns", {"logical_date": None, "conf": {"members": 5}}),
        ("POST", "/api/v2/dags/demo_data/dagRuns", {"logical_date": None, "conf": {}}),
    ]


def test_active_runs_are_queued_and_running_oldest_first() -> None:
    runs = [
        {"dag_run_id": "b", "run_after": "2026-01-02T00:00:00Z"},
        {"dag_run_id": "a", "run_after": "2026-01-01T00:00:00Z"},
    ]
    api = Scripted(lambda *_: {"dag_runs": runs})
    assert api.active_runs("pipe") == ["a", "b"]
    assert api.calls == [("GET", "/api/v2/dags/pipe/dagRuns?state=queued&state=running", None)]


def test_wait_for_dag_retries_until_parsed_then_gives_up(clock: Clock) -> None:
    answers = [BoardstreamError("404"), BoardstreamError("404"), {"dag_id": "d"}]
    api = Scripted(lambda *_: answers.pop(0))
    api.wait_for_dag("d")
    assert (clock.sleeps, answers) == ([3, 3], [])
    never = Scripted(lambda *_: AirflowApiError("not parsed", 404))
    with pytest.raises(AirflowApiError, match="not parsed"):
        never.wait_for_dag("d", timeout_s=10)
    assert clock.now == 6 + 12  # asked at 6, 9, 12, 15 and 18 s: past the deadline of 16 s


def test_unpausing_returns_the_run_the_scheduler_queues(clock: Clock) -> None:
    answers: list[Any] = [
        None,
        {"dag_runs": []},
        {"dag_runs": [{"dag_run_id": "s1", "run_after": "x"}]},
    ]
    api = Scripted(lambda *_: answers.pop(0))
    assert api.run_started_by_unpausing("pipe") == "s1"
    assert api.calls[0] == ("PATCH", "/api/v2/dags/pipe", {"is_paused": False})
    assert clock.sleeps == [1]


def test_unpausing_without_a_queued_run_is_none(clock: Clock) -> None:
    api = Scripted(lambda method, *_: None if method == "PATCH" else {"dag_runs": []})
    assert api.run_started_by_unpausing("pipe", timeout_s=3) is None
    assert clock.sleeps == [1, 1, 1]


def events(*dag_ids: str) -> dict[str, Any]:
    created = [{"dag_id": d, "run_id": f"asset__{d}", "triggering": True} for d in dag_ids]
    return {"asset_events": [{"created_dagruns": created}]}


def test_the_asset_triggered_run_is_asked_for_by_its_source_run(clock: Clock) -> None:
    answers: list[Any] = [
        AirflowApiError("500 start_date", 500),  # Airflow 3.3, run not started yet: ask again
        events(),
        events("audit", "reconciliation"),
    ]
    api = Scripted(lambda *_: answers.pop(0))
    assert api.asset_triggered_run("reconciliation", "pipe", "manual__1+00:00") == (
        "asset__reconciliation"
    )
    assert api.calls[0] == (
        "GET",
        "/api/v2/assets/events?source_dag_id=pipe&source_run_id=manual__1%2B00%3A00",
        None,
    )
    assert clock.sleeps == [3, 3]


def test_the_asset_triggered_run_gives_up_at_the_deadline(clock: Clock) -> None:
    api = Scripted(lambda *_: events("audit"))
    assert api.asset_triggered_run("reconciliation", "pipe", "r", timeout_s=5) is None
    assert clock.sleeps == [3, 3]


def test_other_errors_of_the_asset_events_are_not_retried(clock: Clock) -> None:
    api = Scripted(lambda *_: AirflowApiError("403 forbidden", 403))
    with pytest.raises(AirflowApiError, match="403"):
        api.asset_triggered_run("reconciliation", "pipe", "r")
    assert clock.sleeps == []


def test_wait_returns_the_final_state_logging_task_states_every_15_s(clock, caplog) -> None:
    states = ["queued"] * 8 + ["running"] * 4 + ["failed"]

    def route(_method: str, path: str, _body: Any) -> Any:
        if path.endswith("/taskInstances"):
            return {
                "task_instances": [
                    {"task_id": "join", "state": "success"},
                    {"task_id": "sink", "state": None},
                ]
            }
        return {"state": states.pop(0)}

    api = Scripted(route)
    with caplog.at_level(logging.INFO, logger=airflow_api.logger.name):
        assert api.wait("pipe", "r1") == "failed"
    assert [r.getMessage() for r in caplog.records] == [
        "pipe: join success, sink scheduled (16 s)",
        "pipe: failed after 24 s",
    ]


def test_wait_asks_again_while_the_api_does_not_answer(clock: Clock, caplog) -> None:
    """The production-scale demo's generator, in a task beside the API server, kept an answer
    past the request's 30 s, and the demo ended on it (#67)."""
    slow = AirflowUnreachableError("Airflow API at http://af unreachable: timed out")
    answers: list[Any] = [slow, slow, {"state": "success"}]
    api = Scripted(lambda method, path, _: answers.pop(0))
    with caplog.at_level(logging.WARNING, logger=airflow_api.logger.name):
        assert api.wait("demo_data", "r1") == "success"
    assert [r.getMessage() for r in caplog.records] == [
        "demo_data: Airflow API at http://af unreachable: timed out; asking again"
    ] * 2
    # Past the wait's own timeout, the API's silence ends it.
    silent = Scripted(lambda method, path, _: slow)
    with pytest.raises(AirflowUnreachableError):
        silent.wait("demo_data", "r1", timeout_s=10)


def test_wait_gives_up_after_its_timeout(clock: Clock) -> None:
    api = Scripted(lambda method, path, _: {"state": "running", "task_instances": []})
    with pytest.raises(BoardstreamError, match=r"^pipe run r1 not finished after 12 s$"):
        api.wait("pipe", "r1", timeout_s=10)
