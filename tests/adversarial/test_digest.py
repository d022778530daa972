"""The content digest cannot be fooled by contents that the old separator-joined hash could
not tell apart (moved text, NULL against an equivalent character), and is the same for the
same typed values however they reached Spark."""

from __future__ import annotations

from boardstream.joins import schema
from boardstream.pipelines import shipped
from boardstream.reconcile.layout import ReconcileLayout
from boardstream.reconcile.reads.readers import content_digest

LAYOUT = ReconcileLayout.of(shipped("board_detail"))
CONTENT = LAYOUT.content_names
CONTENT_DDL = schema.ddl(LAYOUT.content)

BASE = {name: None for name in CONTENT} | {"board_id": "b1", "member_id": 1, "title": "t"}


def digests(spark, *rows: dict) -> list[int]:
    frame = spark.createDataFrame([tuple(row[c] for c in CONTENT) for row in rows], CONTENT_DDL)
    return [row.d for row in frame.select(content_digest(LAYOUT).alias("d")).collect()]


def test_ambiguous_contents_digest_apart(spark) -> None:
    pairs = [
        ({"title": "a\u0001b", "body": "c"}, {"title": "a", "body": "b\u0001c"}),
        ({"phone": None}, {"phone": "\u0000"}),
        ({"phone": None}, {"phone": ""}),
        ({"city": "1"}, {"city": "1 "}),
        ({"nickname": "x", "city": None}, {"nickname": None, "city": "x"}),
    ]
    for left, right in pairs:
        a, b = digests(spark, BASE | left, BASE | right)
        assert a != b, (left, right)


def test_equal_contents_digest_alike(spark) -> None:
    a, b = digests(spark, BASE | {"title": "é\u0001"}, BASE | {"title": "é\u0001"})
    assert a == b
