"""The metadata directory ids of a cluster spread over hosts: derived from the cluster and node
ids, the same on every host and in every version (a host formatted before an upgrade must agree
with one formatted after), one per node and cluster, and always ids Kafka accepts."""

from __future__ import annotations

import base64
import re

from boardstream.stack import kafka_ids
from boardstream.stack.kafka_ids import directory_id, new_cluster_id


def test_directory_ids_are_derived_alike_everywhere() -> None:
    assert [directory_id("MkU3OEVBNTcwNTJENDM2Qg", n) for n in (1, 2, 3)] == [
        "U5H-Z9KqyVLIEmM0epJKVw",
        "hEwR2aFVLi9mF5EcRfWcyQ",
        "QBIutrF3fQOILlSjMLyajQ",
    ]


def test_directory_ids_differ_by_node_and_by_cluster() -> None:
    clusters = [new_cluster_id() for _ in range(2_000)]
    ids = [directory_id(cluster, node) for cluster in clusters for node in (1, 2, 3)]
    assert len(set(ids)) == len(ids)
    for each in ids:
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", each)
        assert not each.startswith("-")
        assert len(base64.urlsafe_b64decode(each + "==")) == 16


def test_a_reserved_or_option_like_digest_is_passed_over_for_the_next(monkeypatch) -> None:
    """Kafka reserves the ids with high bits 0 and low bits below 100; one starting with "-"
    would be read as an option by the storage tool. The next digest is taken, as every host
    would take it."""
    digests = iter(
        [
            bytes(15) + b"\x05",  # reserved (DirectoryId: 0, 5)
            bytes(8) + b"\xff" * 8,  # reserved too: the low bits are -1, signed
            b"\xfb" + bytes(15),  # "-" first
            b"\x01" * 16,
        ]
    )
    seen = []

    class Digest:
        def __init__(self, text: bytes) -> None:
            seen.append(text.decode().rsplit("\0", 1)[1])
            self.raw = next(digests) + bytes(16)

        def digest(self) -> bytes:
            return self.raw

    monkeypatch.setattr(kafka_ids.hashlib, "sha256", Digest)
    assert directory_id("c", 1) == kafka_ids.kafka_uuid(b"\x01" * 16)
    assert seen == ["0", "1", "2", "3"]
