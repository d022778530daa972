"""The topics one pipeline's join reads and writes, as a deployment names them: the
declaration's own, or for the shipped pipeline the settings' (whose topic prefix keeps tests and
benchmarks apart on one broker)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from boardstream.pipelines import Pipeline, shipped
from boardstream.settings import Settings

# The pipeline that runs on the settings' topics, the one every command takes by default.
SHIPPED_PIPELINE = "board_detail"


@dataclass(frozen=True)
class JoinTopics:
    stream: str
    table: str
    tick: str
    joined: str
    unmatched: str
    dead_letters: str

    @classmethod
    def of(cls, settings: Settings) -> JoinTopics:
        """The shipped pipeline's, from the settings (a test's own prefix included)."""
        return cls(
            settings.board_topic,
            settings.member_topic,
            settings.join_tick_topic,
            settings.board_detail_topic,
            settings.unmatched_topic,
            settings.dlq_topic,
        )

    @classmethod
    def declared(cls, pipeline: Pipeline) -> JoinTopics:
        """``pipeline``'s, as its declaration names them (outputs derived from its name unless
        given)."""
        outputs = pipeline.outputs
        return cls(
            pipeline.stream.topic,
            pipeline.table.topic,
            outputs.tick,
            outputs.joined,
            outputs.unmatched,
            outputs.dead_letters,
        )


@dataclass(frozen=True)
class Deployed:
    """A pipeline as a deployment runs it: its declaration and its topics."""

    pipeline: Pipeline
    topics: JoinTopics

    @classmethod
    def shipped(cls, settings: Settings) -> Self:
        """board_detail on the settings' topics (a test's own prefix included)."""
        return cls(shipped(SHIPPED_PIPELINE), JoinTopics.of(settings))

    @classmethod
    def declared(cls, pipeline: Pipeline) -> Self:
        """``pipeline`` on the topics its declaration names."""
        return cls(pipeline, JoinTopics.declared(pipeline))
