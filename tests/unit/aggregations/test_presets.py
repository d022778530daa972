"""The board domain's aggregations: each preset is a generic job pointed at boardstream's own
topics (so a topic prefix moves them too), with the fields and spans docs/COMMANDS.md promises,
and an unknown name is refused listing the known ones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from boardstream.aggregations.presets import PRESETS, preset
from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.spark.submit import JOBS


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(var_dir=tmp_path).with_topic_prefix("t1")


def test_each_preset_runs_a_known_job() -> None:
    assert {name: (p.job, p.description) for name, p in PRESETS.items()} == {
        "boards-per-member": ("table-count", "boards each member has now"),
        "member-sessions": ("session-count", "boards per member activity session"),
        "boards-per-city": ("window-count", "joined boards per city per minute"),
    }
    assert {p.job for p in PRESETS.values()} <= set(JOBS)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "boards-per-member",
            "--source-topic t1-board --output-topic t1-board-boards-per-member "
            "--value-field member_id --order event-time",
        ),
        (
            "member-sessions",
            "--source-topic t1-board --output-topic t1-board-member-sessions "
            "--value-field member_id --gap 30m --grace 1m",
        ),
        (
            "boards-per-city",
            "--source-topic t1-board-detail --output-topic t1-board-detail-boards-per-city "
            "--value-field city --size 1m --grace 10s",
        ),
    ],
)
def test_job_args_follow_the_settings_topics(name: str, expected: str, settings) -> None:
    assert preset(name).job_args(settings) == expected.split()


def test_job_args_are_a_fresh_list_each_time(settings) -> None:
    chosen = preset("member-sessions")
    chosen.job_args(settings).append("--mutated")
    assert "--mutated" not in chosen.job_args(settings)


def test_an_unknown_preset_names_the_known_ones() -> None:
    message = (
        "unknown aggregation 'boards-per-town'; known: "
        "boards-per-member, member-sessions, boards-per-city"
    )
    with pytest.raises(BoardstreamError, match=f"^{re.escape(message)}$"):
        preset("boards-per-town")
