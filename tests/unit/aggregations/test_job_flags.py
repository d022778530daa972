"""Bad flags stop the aggregation jobs with a clear message and exit 2, before any Spark."""

from __future__ import annotations

import pytest

from boardstream.entrypoints.jobs import session_main, table_count_main, window_main
from boardstream.spark import streaming

TOPICS = ["--source-topic", "board", "--output-topic", "out"]


@pytest.mark.parametrize(
    ("main", "args", "message"),
    [
        (window_main, ["--size=-5s"], "expected a duration like 500ms"),
        (window_main, ["--size", "0s"], "must be > 0"),
        (
            window_main,
            ["--size", "1m", "--grace", "30s", "--retention", "1m"],
            "--retention (60000 ms) must be at least --size + --grace (90000 ms)",
        ),
        (window_main, ["--size", "1m", "--emit", "sometimes"], "invalid choice: 'sometimes'"),
        (session_main, ["--gap", "1m", "--retention", "30s"], "must be at least --gap + --grace"),
        (session_main, ["--gap", "1m", "--group-by", "city"], "invalid choice: 'city'"),
        (table_count_main, ["--value-field", "member id"], "not a field name"),
        (table_count_main, ["--order", "random"], "invalid choice: 'random'"),
    ],
)
def test_bad_flags_exit_2_naming_the_problem(main, args, message, capsys, monkeypatch) -> None:
    monkeypatch.setattr(streaming, "run_job", lambda *_: pytest.fail("Spark was started"))
    with pytest.raises(SystemExit) as exit_:
        main([*TOPICS, *args])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_good_flags_reach_the_job(monkeypatch) -> None:
    """The same seam, so the test above can fail: valid flags do start the job."""
    started = []
    monkeypatch.setattr(streaming, "run_job", lambda name, start: started.append(name) or 0)
    assert window_main([*TOPICS, "--size", "1m", "--grace", "30s", "--retention", "2m"]) == 0
    assert started == ["window-count"]
