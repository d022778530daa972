"""What of an aggregation's source options ties a checkpoint: everything its state depends on,
not the batch size (``max_offsets_per_trigger`` may change between runs). ``parse`` itself is a
Spark column expression and is covered by the integration tier (test_table_count and
test_event_time_counts)."""

from __future__ import annotations

from boardstream.aggregations.source import SourceOptions, identity


def test_defaults_read_the_value_as_text_in_record_time_with_tombstones() -> None:
    options = SourceOptions("board")
    assert (options.value_field, options.time_field, options.max_offsets_per_trigger) == (
        None,
        None,
        None,
    )
    assert options.tombstones is True


def test_identity_is_every_option_but_the_batch_size() -> None:
    options = SourceOptions("board", "city", "created_ts", 1_000, tombstones=False)
    assert identity(options) == {
        "topic": "board",
        "value_field": "city",
        "time_field": "created_ts",
        "tombstones": False,
    }
    assert identity(options) == identity(SourceOptions("board", "city", "created_ts", 5, False))
    assert identity(options) != identity(SourceOptions("board", "city", None, 1_000, False))
