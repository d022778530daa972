"""A pipeline's topics: the shipped one's declaration names the settings' default topics, so
the two ways a deployment names them agree until a test or a benchmark gives its own prefix."""

from __future__ import annotations

from boardstream.joins.topics import JoinTopics
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
