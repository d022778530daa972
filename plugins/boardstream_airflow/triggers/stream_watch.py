"""Watch the live streams from the triggerer, holding no worker slot.

Fires once, when there is something to act on: a stream wanted running is unhealthy (not
running, no batch within its SLO, or too far behind), or what is wanted changed (a stop or
start request). While all is well it only sleeps and looks again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

UNHEALTHY, REQUEST_CHANGED = "unhealthy", "request_changed"


class StreamWatchTrigger(BaseTrigger):
    """``wanted_running``: what was wanted when the watch began; ``settings``: the Settings
    fields the watching needs (var dir, checkpoint root, SLO), as the task resolved them."""

    def __init__(self, wanted_running: bool, settings: dict[str, Any], poll_s: float = 5.0):
        super().__init__()
        self.wanted_running = wanted_running
        self.settings = settings
        self.poll_s = poll_s

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "wanted_running": self.wanted_running,
                "settings": self.settings,
                "poll_s": self.poll_s,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from boardstream import supervision
        from boardstream.settings import Settings

        settings = Settings(**self.settings)
        while True:
            verdicts = await asyncio.to_thread(supervision.health, settings)
            wanted = all(v.wanted for v in verdicts)
            if wanted != self.wanted_running:
                yield TriggerEvent({"status": REQUEST_CHANGED, "wanted_running": wanted})
                return
            unhealthy = {v.job: list(v.reasons) for v in verdicts if v.wanted and not v.healthy}
            if unhealthy:
                yield TriggerEvent({"status": UNHEALTHY, "reasons": unhealthy})
                return
            await asyncio.sleep(self.poll_s)
