"""An incremental reconciliation reads its new records through the driver's consumer
(``readers.consume_topics``), a full run through Spark's Kafka source (``readers.read_topics``):
on the same ranges of a real broker, with what a topic can hold (null keys and values, aborted
and committed transactions, records deleted below a range's start, empty ranges), both read
exactly the same records."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer, TopicPartition

from boardstream.errors import BoardstreamError
from boardstream.kafka import replay
from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import TopicSpec, create_topics, describe_topics
from boardstream.reconcile.reads import readers

COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp"]


def _rows(frame) -> list[tuple]:
    """The frame's records by position (topic, partition, offset)."""
    return sorted((tuple(row) for row in frame.select(*COLUMNS).collect()), key=lambda r: r[2:5])


@pytest.fixture(scope="module")
def topics(kafka):
    """Two topics: ``a`` with plain records, tombstones, null keys, an aborted and a committed
    transaction and its first records deleted; ``b`` with a partition left empty."""
    a, b = f"reads-a-{uuid.uuid4().hex[:8]}", f"reads-b-{uuid.uuid4().hex[:8]}"
    admin = admin_client(kafka)
    create_topics(admin, kafka, [TopicSpec(a, 2, 1), TopicSpec(b, 2, 1)])
    plain = Producer(kafka.to_confluent())
    for i in range(40):
        plain.produce(
            a,
            key=None if i % 7 == 0 else f"k{i}",
            value=None if i % 5 == 0 else f"v{i}",
            partition=i % 2,
        )
    for i in range(10):
        plain.produce(b, key=f"b{i}", value=f"w{i}", partition=0)
    assert plain.flush(30) == 0
    transactional = Producer({**kafka.to_confluent(), "transactional.id": f"reads-{a}"})
    transactional.init_transactions(30)
    for commit in (False, True):
        transactional.begin_transaction()
        for i in range(6):
            transactional.produce(
                a, key=f"t{i}", value=f"{'kept' if commit else 'aborted'}{i}", partition=i % 2
            )
        assert transactional.flush(30) == 0  # in the log before the abort, not just purged
        if commit:
            transactional.commit_transaction(30)
        else:
            transactional.abort_transaction(30)
    for future in admin.delete_records([TopicPartition(a, 0, 5)]).values():
        future.result()
    return kafka, a, b


def _ends(settings, topic: str) -> dict[int, int]:
    (description,) = describe_topics(admin_client(settings), settings, [topic])
    return dict(description.end_offsets)


@pytest.mark.parametrize(
    "starts",
    [
        pytest.param({"a": {}, "b": {}}, id="from-zero-below-the-deleted-records"),
        pytest.param({"a": {0: 9, 1: 13}, "b": {0: 4}}, id="from-the-middle"),
        pytest.param({"a": {0: 3}, "b": {0: 10, 1: 0}}, id="an-empty-range-and-an-empty-partition"),
    ],
)
def test_the_consumer_reads_what_sparks_source_reads(spark, topics, starts) -> None:
    settings, a, b = topics
    ranges = {
        a: (starts["a"], _ends(settings, a)),
        b: (starts["b"], _ends(settings, b)),
    }
    by_source = _rows(readers.read_topics(spark, settings, ranges))
    by_consumer = _rows(readers.consume_topics(spark, settings, ranges))
    assert by_consumer == by_source
    values = [row[1] for row in by_consumer]
    assert not any(v is not None and v.startswith(b"aborted") for v in values)
    assert any(v is not None and v.startswith(b"kept") for v in values)
    assert None in values and None in [row[0] for row in by_consumer]


def test_nothing_past_a_ranges_end_is_read(spark, topics) -> None:
    """Partition 0 of ``a``: plain records at 0-19, the aborted transaction's at 20-22 and its
    marker at 23, the committed one's at 24-26: a range ending at 24 ends on the marker, so the
    next record the consumer sees is already past it."""
    settings, a, _ = topics
    ranges = {a: ({0: 18, 1: 0}, {0: 24, 1: 3})}
    got = [(row[3], row[4]) for row in _rows(readers.consume_topics(spark, settings, ranges))]
    assert got == [(0, 18), (0, 19), (1, 0), (1, 1), (1, 2)]


def test_a_range_past_the_partitions_end_fails_loudly(topics) -> None:
    settings, _, b = topics
    quick = settings.model_copy(update={"connect_timeout_s": 0.5})
    with pytest.raises(BoardstreamError, match=rf"reading {b}\[1\]: nothing read for 1.5s"):
        replay.read_ranges(quick, {b: {1: (0, 3)}}, lambda message: None)
