"""The live streams and the flags they start with."""

from __future__ import annotations

import pytest

from boardstream.errors import InvalidOptionError
from boardstream.supervision.streams import StreamOptions, board_detail_streams
from tests.fixtures import isolated_settings


def test_the_join_then_the_sink_each_on_its_checkpoint_with_its_share_of_cores(tmp_path) -> None:
    settings = isolated_settings(tmp_path, stream_join_cores=3, stream_sink_cores=1)
    options = StreamOptions("real-time", "30 seconds", "2 seconds", ("--join-mode=as-of",))
    join, sink = board_detail_streams(settings, options)
    assert (join.job, join.checkpoint) == (
        "board-detail-join",
        (tmp_path / "checkpoints" / join.job).as_uri(),
    )
    assert join.args == ("--trigger=real-time", "--interval=30 seconds", "--join-mode=as-of")
    assert join.conf() == {"spark.cores.max": "3"}
    assert (sink.job, sink.checkpoint) == (
        "board-detail-sink",
        (tmp_path / "checkpoints" / sink.job).as_uri(),
    )
    assert sink.args == ("--trigger=processing-time", "--interval=2 seconds")
    assert sink.conf() == {"spark.cores.max": "1"}


def test_available_now_is_no_live_trigger() -> None:
    with pytest.raises(InvalidOptionError, match="catch-up DAG") as refused:
        StreamOptions(trigger="available-now")
    assert refused.value.options == ("trigger",)


@pytest.mark.parametrize("interval", ["500 milliseconds", "4 seconds", "5m"])
def test_a_real_time_stream_needs_a_checkpoint_interval_spark_takes(interval: str) -> None:
    with pytest.raises(InvalidOptionError, match="interval") as refused:
        StreamOptions(trigger="real-time", interval=interval)
    assert refused.value.options == ("interval",)
    assert StreamOptions(trigger="processing-time", interval="500 milliseconds")
