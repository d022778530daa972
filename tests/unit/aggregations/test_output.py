"""Where aggregation results go, decided without Spark or a broker: a batch is split into its
valid records in arrival order and its dead letters; the DLQ is the job's own unless named;
the output topic is compacted and the DLQ a stream, checked to fit the largest dead letter; and
a job's checkpoint is tied to its source (not its batch size), output, DLQ and identity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from boardstream import dead_letters
from boardstream.aggregations import output
from boardstream.aggregations.output import (
    DLQ,
    OUTPUT,
    create_output_topics,
    dlq_topic,
    split_batch,
    start_output,
)
from boardstream.aggregations.source import SourceOptions
from boardstream.aggregations.table_count import TableCountConfig
from boardstream.kafka.topics import TopicSpec
from boardstream.settings import Settings


def rows(*records: tuple[int, int, str | None]) -> pd.DataFrame:
    """(partition, offset, dead letter or None) records; a dead one's key is ``k<offset>``."""
    return pd.DataFrame(
        [
            {
                "entity": f"e{offset}",
                "partition": partition,
                "offset": offset,
                "dead_key": f"k{offset}" if letter else None,
                "dead_letter": letter,
            }
            for partition, offset, letter in records
        ]
    )


def test_routes_and_the_output_schema() -> None:
    assert (OUTPUT, DLQ) == ("output", "dlq")
    assert output.OUTPUT_DDL == "route string, key string, value string"


def test_a_batch_is_its_valid_records_in_arrival_order_and_its_dead_letters() -> None:
    valid, letters = split_batch(
        iter([rows((1, 4, None), (0, 9, "bad-9")), rows((0, 2, None), (1, 3, "bad-3"))])
    )
    assert list(zip(valid["partition"], valid["offset"], strict=True)) == [(0, 2), (1, 4)]
    assert valid["entity"].tolist() == ["e2", "e4"]
    (letter_frame,) = letters
    assert letter_frame.values.tolist() == [["dlq", "k9", "bad-9"], ["dlq", "k3", "bad-3"]]
    assert letter_frame.columns.tolist() == ["route", "key", "value"]


def test_a_batch_without_dead_letters_yields_no_dlq_frame() -> None:
    valid, letters = split_batch(iter([rows((0, 1, None), (0, 0, None))]))
    assert valid["offset"].tolist() == [0, 1]
    assert letters == []


@pytest.mark.parametrize(
    ("chosen", "expected"), [(None, "per-city-dlq"), ("", "per-city-dlq"), ("mine", "mine")]
)
def test_each_job_has_its_own_dlq_unless_named(chosen: str | None, expected: str) -> None:
    assert dlq_topic("per-city", chosen) == expected


def test_the_output_is_compacted_the_dlq_a_stream_and_a_dead_letter_must_fit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: dict[str, Any] = {}
    monkeypatch.setattr(output, "admin_client", lambda _settings: "admin")
    monkeypatch.setattr(
        output, "create_topics", lambda admin, _s, specs: calls.update(create=(admin, specs))
    )
    monkeypatch.setattr(
        output,
        "require_fit",
        lambda admin, _s, producer, largest: calls.update(fit=(admin, producer, largest)),
    )
    settings = Settings(var_dir=tmp_path, partitions=4, replication_factor=2)
    create_output_topics(settings, "per-city", "per-city-dlq")
    assert calls["create"] == (
        "admin",
        [
            TopicSpec("per-city", 4, 2, {"cleanup.policy": "compact"}),
            TopicSpec("per-city-dlq", 4, 2, {"cleanup.policy": "delete"}),
        ],
    )
    largest = dead_letters.largest_dead_letter(dead_letters.DEFAULT_PREFIX_BYTES)
    assert calls["fit"] == (
        "admin",
        ("the producer's max.request.size (kafka.max.request.size)", 1_048_576),
        {"per-city-dlq": (largest, "a dead letter (keeping up to 262,144 bytes of a record)")},
    )


def test_start_creates_the_topics_then_starts_with_the_checkpoint_identity(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    steps: list[tuple[Any, ...]] = []
    monkeypatch.setattr(output, "create_output_topics", lambda *args: steps.append(args[1:]))
    monkeypatch.setattr(
        output.streaming, "configure_no_data_batches", lambda _spark, t: steps.append((t,))
    )
    monkeypatch.setattr(output.streaming, "start_to_kafka", lambda *args: steps.append(args))
    settings = Settings(var_dir=tmp_path)
    config = TableCountConfig(
        source=SourceOptions("member", value_field="city", max_offsets_per_trigger=500),
        output_topic="per-city",
        trigger="processing-time",
        interval="5 seconds",
    )
    start_output("spark", settings, config, lambda *args: ("rows", *args), {"order": "arrival"})
    created, no_data, started = steps
    assert created == ("per-city", "per-city-dlq")
    assert no_data == ("processing-time",)
    assert started == (
        ("rows", "spark", settings, config),
        settings,
        "table-count-per-city",
        (tmp_path / "checkpoints" / "table-count-per-city").as_uri(),
        "processing-time",
        "5 seconds",
        {
            # The batch size is not part of it: changing it keeps the checkpoint.
            "source": {
                "topic": "member",
                "value_field": "city",
                "time_field": None,
                "tombstones": True,
            },
            "output": "per-city",
            "dlq": None,
            "order": "arrival",
        },
    )
