"""A pipeline's topics: the shipped one's declaration names the settings' default topics, so
the two ways a deployment names them agree until a test or a benchmark gives its own prefix."""

from __future__ import annotations

import pytest

from boardstream.errors import InvalidOptionError
from boardstream.joins.job import PYTHON, JoinJobConfig, start_join
from boardstream.joins.topics import Deployed, JoinTopics
from boardstream.pipelines import shipped
from boardstream.settings import Settings


def test_the_shipped_declaration_names_the_settings_default_topics() -> None:
    assert JoinTopics.declared(shipped("board_detail")) == JoinTopics.of(Settings())


def test_a_prefix_renames_every_topic_of_the_shipped_pipeline() -> None:
    topics = JoinTopics.of(Settings().with_topic_prefix("t1"))
    assert vars(topics) == {
        "stream": "t1-board",
        "table": "t1-member",
        "tick": "t1-board-join-tick",
        "joined": "t1-board-detail",
        "unmatched": "t1-board-unmatched",
        "dead_letters": "t1-board-dlq",
    }


def test_another_declaration_names_its_own() -> None:
    assert vars(JoinTopics.declared(shipped("orders"))) == {
        "stream": "orders",
        "table": "customers",
        "tick": "orders-join-tick",
        "joined": "orders-joined",
        "unmatched": "orders-unmatched",
        "dead_letters": "orders-dlq",
    }


def test_the_python_engine_refuses_another_pipeline_before_anything_starts() -> None:
    """Its state layout is board_detail's alone: another pipeline is one refusal, before a
    session, a topic or a checkpoint is touched (no Spark here)."""
    with pytest.raises(InvalidOptionError) as refused:
        start_join(
            None, Settings(), JoinJobConfig(engine=PYTHON), Deployed.declared(shipped("orders"))
        )  # type: ignore[arg-type]
    assert str(refused.value) == "engine python joins board_detail only; orders runs on engine jvm"
