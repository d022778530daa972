"""The Quix Streams peer of bench/compare.py: board ⋈ member with Quix's own stream-table join.

    python join.py BOOTSTRAP MEMBER_TOPIC BOARD_TOPIC OUTPUT_TOPIC CONSUMER_GROUP STATE_DIR

Boards are re-keyed by member_id (``group_by``, through a repartition topic) and joined with
``join_asof(how="inner")``: each board takes the member version whose timestamp is at or before
the board's. A board with no such member (late or missing) is dropped, which the runner counts.
"""

from __future__ import annotations

import sys

from quixstreams import Application

# Same partition for the same key as Java clients (Kafka Streams, Spark's Kafka sink) and the
# generator; the repartitioned boards must land where their member's key does. Batching as
# boardstream's Spark Kafka sink and the Java peers do.
PRODUCER = {
    "partitioner": "murmur2_random",
    "acks": "all",
    "batch.size": 262_144,
    "linger.ms": 5,
}


def detail(board: dict, member: dict) -> dict:
    """The fields boardstream's board-detail carries (without its provenance columns)."""
    return {
        "board_id": board["id"],
        "member_id": board["member_id"],
        "nickname": member["nickname"],
        "city": member["city"],
        "phone": member["phone"],
        "title": board["title"],
        "body": board["body"],
        "created_at": board["created_at"],
        "modified_at": board["modified_at"],
    }


def main(bootstrap: str, member: str, board: str, output: str, group: str, state: str) -> None:
    app = Application(
        broker_address=bootstrap,
        consumer_group=group,
        auto_offset_reset="earliest",
        state_dir=state,
        producer_extra_config=PRODUCER,
    )
    # Member keys are the id's digits, which read as JSON give the same int the repartitioned
    # boards carry: both sides look up the same key in the join's store.
    members = app.dataframe(app.topic(member, key_deserializer="json", value_deserializer="json"))
    boards = app.dataframe(app.topic(board, key_deserializer="str", value_deserializer="json"))
    by_member = boards.group_by("member_id")
    joined = by_member.join_asof(members, how="inner", on_merge=detail)
    joined.to_topic(
        app.topic(output, key_serializer="str", value_serializer="json"),
        key=lambda value: value["board_id"],
    )
    app.run()


if __name__ == "__main__":
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    main(*sys.argv[1:])
