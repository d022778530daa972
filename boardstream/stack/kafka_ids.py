"""Kafka's ids as the local stack makes them: a new cluster's, at random, and its nodes' metadata
directories', derived.

Both are Kafka ``Uuid``s in their string form: 16 bytes as URL-safe base64 without padding. A
cluster whose nodes run on hosts of their own (``BOARDSTREAM_KAFKA_NODE``) cannot format its
nodes together as ``stack up --brokers 3`` does: each host formats its own node, with the same
initial voters as the others, each named with its metadata directory's id. So the directory ids
are not drawn at random but derived from the cluster id and the node id, and every host that
shares the cluster id derives the same ones without asking the others.
"""

from __future__ import annotations

import base64
import hashlib
import uuid

# Changing it changes every derived directory id: hosts formatted before and after would not
# agree on their voters.
DIRECTORY_ID_DOMAIN = "boardstream kafka metadata directory"
# Kafka reserves the directory ids whose high 64 bits are 0 and low 64 bits (signed) below 100
# (DirectoryId.reserved: unassigned, lost, migrating, ...).
RESERVED_BELOW = 100


def kafka_uuid(raw: bytes) -> str:
    """``raw``'s 16 bytes in Kafka's string form (``Uuid.toString``)."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def new_cluster_id() -> str:
    """A random KRaft cluster id (URL-safe base64 of a UUID). Like Kafka's own Uuid, never one
    starting with "-": the storage tool's argument parser would take it for an option (it did,
    about once in 64 test sessions)."""
    while True:
        cluster_id = kafka_uuid(uuid.uuid4().bytes)
        if not cluster_id.startswith("-"):
            return cluster_id


def directory_id(cluster_id: str, node_id: int) -> str:
    """The metadata directory id of node ``node_id`` of cluster ``cluster_id``: the first 16
    bytes of a SHA-256 of both, the same on every host, different for every node and cluster.
    Like Kafka's ``DirectoryId.random``, never a reserved id nor one starting with "-" (the next
    digest is taken instead, as deterministically)."""
    attempt = 0
    while True:
        text = f"{DIRECTORY_ID_DOMAIN}\0{cluster_id}\0{node_id}\0{attempt}"
        raw = hashlib.sha256(text.encode()).digest()[:16]
        reserved = not any(raw[:8]) and int.from_bytes(raw[8:], signed=True) < RESERVED_BELOW
        directory = kafka_uuid(raw)
        if not reserved and not directory.startswith("-"):
            return directory
        attempt += 1
