"""A standalone master's free cores, read from its web UI's JSON (on the master's own host): what
a stream is refused on."""

from __future__ import annotations

import pytest

from boardstream.settings import Settings
from boardstream.spark import standalone
from boardstream.spark.standalone import Cores, granted_cores, master_host

# The fields of a master's /json/ this reads, as Spark 4.1's master serves them.
STATE = {
    "workers": [
        {"id": "w1", "state": "ALIVE", "cores": 2, "coresused": 2},
        {"id": "w2", "state": "ALIVE", "cores": 3, "coresused": 1},
        {"id": "w3", "state": "DEAD", "cores": 8, "coresused": 0},
    ],
    "cores": 13,
    "coresused": 3,
    "activeapps": [
        {"id": "app-1", "name": "board-detail-join", "cores": 2, "state": "RUNNING"},
        {"id": "app-2", "name": "board-detail-sink", "cores": 0, "state": "WAITING"},
    ],
}


def test_free_cores_are_the_live_workers_less_those_in_use() -> None:
    cores = Cores.of(STATE)
    assert cores == Cores(total=5, free=2, workers=2)
    assert cores.describe() == "2 free of 5 (2 live workers)"
    assert Cores.of({"workers": []}).describe() == "0 free of 0 (0 live workers)"


@pytest.mark.parametrize(
    ("master", "host"),
    [
        ("spark://127.0.0.1:7077", "127.0.0.1"),
        ("spark://spark-master:7077", "spark-master"),
        ("local[2]", None),
        ("local-cluster[2,1,1024]", None),
    ],
)
def test_only_a_standalone_master_has_a_host(master: str, host: str | None) -> None:
    assert master_host(Settings(spark_master=master)) == host


def test_an_application_has_the_cores_granted_while_it_is_active() -> None:
    assert [granted_cores(STATE, app) for app in ("app-1", "app-2", "app-3")] == [2, 0, None]


def test_the_state_is_asked_of_the_masters_own_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """state_of and free_cores (the supervisor's refusal, the streams' health) ask the host
    BOARDSTREAM_SPARK_MASTER names, on the master's UI port; local mode asks nobody."""
    asked: list[tuple[str, int]] = []

    def master_state(host: str, ui_port: int) -> dict:
        asked.append((host, ui_port))
        return STATE

    monkeypatch.setattr(standalone, "master_state", master_state)
    remote = Settings(spark_master="spark://10.232.2.2:7077", spark_master_ui_port=8190)
    assert standalone.state_of(remote) == STATE
    assert standalone.free_cores(remote) == Cores(total=5, free=2, workers=2)
    assert standalone.state_of(Settings(spark_master="local[2]")) is None
    assert asked == [("10.232.2.2", 8190), ("10.232.2.2", 8190)]
