"""Bad job arguments fail before any Spark starts, naming the problem (exit 2)."""

from __future__ import annotations

import pytest

from boardstream.entrypoints.jobs import join_main, sink_main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--join-mode", "newest"], "invalid choice: 'newest'"),
        (["--unmatched-timeout", "soon"], "expected a duration like 500ms"),
        (["--state-buckets", "0"], "argument --state-buckets: must be > 0, got 0"),
        (
            ["--max-pending-per-member", "-1"],
            "argument --max-pending-per-member: must be > 0, got -1",
        ),
        (["--trigger", "once"], "invalid choice: 'once'"),
    ],
)
def test_join_arguments(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        join_main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_sink_arguments(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        sink_main(["--max-offsets-per-trigger", "many"])
    assert exit_info.value.code == 2
    assert "expected a whole number, got 'many'" in capsys.readouterr().err
