"""Triggers as a type, and their intervals as Spark takes them, read by boardstream where it
must know one (a real-time batch reports once per interval) and checked before Spark starts."""

from __future__ import annotations

import json
import re

import pytest

from boardstream.errors import InvalidOptionError
from boardstream.sink.job import SinkJobConfig
from boardstream.spark.triggers import INTERVAL_PATTERN, Trigger, interval_ms, require_interval


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("500 milliseconds", 500),
        ("1 second", 1_000),
        ("30 seconds", 30_000),
        ("5 minutes", 300_000),
        ("1 minute 30 seconds", 90_000),
        ("interval 2 hours", 7_200_000),
        ("1.5 Seconds", 1_500),
        ("  5   Minutes ", 300_000),
        ("1 day", 86_400_000),
        ("1 week", 604_800_000),
        ("250 microseconds", 0.25),
    ],
)
def test_intervals_in_sparks_words(text: str, ms: float) -> None:
    assert interval_ms(text) == ms


@pytest.mark.parametrize(
    "text", ["5m", "30s", "500ms", "5minutes", "", "minutes", "5 minutes and", "5 fortnights"]
)
def test_anything_else_is_refused_naming_the_form(text: str) -> None:
    """Each of these Spark refuses too (``Trigger.ProcessingTime``: "Invalid value 5m")."""
    with pytest.raises(ValueError, match=r"^expected an interval like '500 milliseconds'") as no:
        interval_ms(text)
    assert str(no.value).endswith(f"got {text!r}")
    assert re.match(INTERVAL_PATTERN, text) is None  # the DAG params' pattern


def test_only_seconds_may_have_a_fraction() -> None:
    with pytest.raises(ValueError, match=r"^only seconds may have a fraction"):
        interval_ms("1.5 minutes")


def test_each_trigger_is_held_to_what_spark_takes_of_it() -> None:
    require_interval("processing-time", "0 seconds")
    require_interval("real-time", "5 seconds")
    require_interval("available-now", "5m")  # no interval: not read
    with pytest.raises(InvalidOptionError, match=r"^a real-time checkpoint interval is at le"):
        require_interval("real-time", "4999 milliseconds")
    with pytest.raises(InvalidOptionError, match=r"^expected an interval") as refused:
        require_interval("processing-time", "30s", "sink_interval")
    assert refused.value.options == ("sink_interval",)


def test_a_trigger_is_a_type_read_from_its_name() -> None:
    assert Trigger.of("real-time") is Trigger.REAL_TIME
    assert json.dumps({"trigger": Trigger.REAL_TIME}) == '{"trigger": "real-time"}'
    assert f"{Trigger.AVAILABLE_NOW}" == "available-now"  # in messages, as the flag spells it
    with pytest.raises(InvalidOptionError) as refused:
        Trigger.of("available-now", (Trigger.PROCESSING_TIME, Trigger.REAL_TIME), "--trigger")
    assert str(refused.value) == (
        "--trigger must be one of processing-time, real-time, got 'available-now'"
    )
    assert refused.value.options == ("--trigger",)


def test_a_query_config_holds_its_trigger_as_the_type() -> None:
    config = SinkJobConfig(trigger="processing-time")
    assert config.trigger is Trigger.PROCESSING_TIME
    with pytest.raises(InvalidOptionError, match=r"^trigger must be one of available-now, "):
        SinkJobConfig(trigger="once")
