"""The board domain's aggregations: the generic jobs configured for boardstream's topics, run
from the CLI (``boardstream aggregate NAME``) or the ``board_aggregations`` DAG."""

from __future__ import annotations

from dataclasses import dataclass

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings


@dataclass(frozen=True)
class Preset:
    name: str
    job: str
    description: str

    def job_args(self, settings: Settings) -> list[str]:
        source = {
            "boards-per-member": settings.board_topic,
            "member-sessions": settings.board_topic,
            "boards-per-city": settings.board_detail_topic,
        }[self.name]
        args = ["--source-topic", source, "--output-topic", f"{source}-{self.name}"]
        return args + _EXTRA[self.name]


# Sessions and windows use the record time (when the post reached Kafka): the posts' own
# created_ts is far out of order across members (the generator spreads it over days), which
# would make most events too late for any reasonable grace.
_EXTRA = {
    # A deleted board (tombstone) decrements its member; the newest event time wins.
    "boards-per-member": ["--value-field", "member_id", "--order", "event-time"],
    # Posts by the same member no more than 30 minutes apart form one session.
    "member-sessions": ["--value-field", "member_id", "--gap", "30m", "--grace", "1m"],
    "boards-per-city": ["--value-field", "city", "--size", "1m", "--grace", "10s"],
}

PRESETS = {
    preset.name: preset
    for preset in (
        Preset("boards-per-member", "table-count", "boards each member has now"),
        Preset("member-sessions", "session-count", "boards per member activity session"),
        Preset("boards-per-city", "window-count", "joined boards per city per minute"),
    )
}


def preset(name: str) -> Preset:
    if name not in PRESETS:
        raise BoardstreamError(f"unknown aggregation {name!r}; known: {', '.join(PRESETS)}")
    return PRESETS[name]
