"""KRaft cluster ids the storage tool accepts."""

from __future__ import annotations

import re

from boardstream.stack.kafka_broker import new_cluster_id


def test_cluster_ids_never_look_like_an_option() -> None:
    ids = [new_cluster_id() for _ in range(5_000)]  # a leading "-" would come ~78 times
    assert not [i for i in ids if i.startswith("-")]
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22}", i) for i in ids)
    assert len(set(ids)) == len(ids)
