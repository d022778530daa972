"""A standalone Spark master as its web UI reports it (``/json/``): its workers, applications,
the cores it has granted each and those left free.

An application that asks for more cores than a standalone cluster has free does not fail: it
waits with none, logging "Initial job has not accepted any resources" every 15 s, and a stream
so started loads nothing while its driver looks alive. What is free is read here, before a
stream is started, so that it is refused with the numbers instead; what an application was
granted, so that a running stream left with no executor is unhealthy.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from boardstream.settings import Settings


def master_host(settings: Settings) -> str | None:
    """The host of ``settings.spark_master`` when it is a standalone master (``spark://``);
    None in local mode."""
    match = re.match(r"^spark://([^:/,]+)", settings.spark_master)
    return match[1] if match else None


def master_state(host: str, ui_port: int) -> dict[str, Any] | None:
    """The master's state as its web UI serves it (``/json/``: status, workers, applications),
    or None while nothing answers there."""
    try:
        with urllib.request.urlopen(f"http://{host}:{ui_port}/json/", timeout=5) as response:
            return json.load(response)
    except (urllib.error.URLError, OSError, ValueError):
        return None


@dataclass(frozen=True)
class Cores:
    """What a cluster's live workers offer and what its applications leave of it."""

    total: int
    free: int
    workers: int

    @classmethod
    def of(cls, state: dict[str, Any]) -> Cores:
        """From the master's ``/json/`` state: its ALIVE workers' cores, less those in use."""
        alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
        total = sum(int(w.get("cores", 0)) for w in alive)
        used = sum(int(w.get("coresused", 0)) for w in alive)
        return cls(total, total - used, len(alive))

    def describe(self) -> str:
        workers = f"{self.workers} live worker{'s' if self.workers != 1 else ''}"
        return f"{self.free} free of {self.total} ({workers})"


def granted_cores(state: dict[str, Any], application_id: str) -> int | None:
    """The cores the master has granted application ``application_id`` (its executors'), or
    None when it does not list it as active."""
    for app in state.get("activeapps", []):
        if app.get("id") == application_id:
            return int(app.get("cores", 0))
    return None


def state_of(settings: Settings) -> dict[str, Any] | None:
    """The state of ``settings.spark_master``; None in local mode, or when its web UI (on
    ``spark_master_ui_port``) does not answer."""
    host = master_host(settings)
    return None if host is None else master_state(host, settings.spark_master_ui_port)


def free_cores(settings: Settings) -> Cores | None:
    """The cores ``settings.spark_master`` has free (None as :func:`state_of`)."""
    state = state_of(settings)
    return None if state is None else Cores.of(state)
