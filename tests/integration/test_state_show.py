"""`boardstream state show` on a real join checkpoint: the operator, its state variables with
rows per partition, and a board waiting for its member, found by its key (the member id in the
jvm engine, its bucket in the python engine)."""

from __future__ import annotations

import json

import pytest

from tests.fixtures import cli
from tests.pipeline import Pipeline


@pytest.mark.parametrize("engine", ["jvm", "python"])
def test_shows_the_joins_state_and_finds_a_waiting_board(
    kafka, spark, tmp_path, engine, t0: int
) -> None:
    pipeline = Pipeline(kafka, spark, tmp_path, engine=engine)
    pipeline.member(1, "here", t0)
    pipeline.board("joined0000000000000000000", 1, t0 + 1)
    pipeline.board("waiting000000000000000000", 99, t0 + 2)  # member 99 never comes
    pipeline.join()
    checkpoint = tmp_path / f"{pipeline.settings.board_topic}-join"

    shown = cli(pipeline.settings, "state", "show", "--checkpoint", str(checkpoint))
    assert shown.returncode == 0, shown.stderr
    assert "[Stage" not in shown.stdout + shown.stderr  # no progress bars in or around the table
    lines = shown.stdout.splitlines()
    if engine == "jvm":  # per member: 1 has a profile, 99 a waiting board
        assert lines[0].startswith("operator 0 transformWithStateExec (3 partitions")
        states = [line.split(" (")[0] for line in lines if line.startswith("  state ")]
        assert sorted(states) == ["  state member: 1 rows", "  state waiting: 1 rows"]
        key = 99
    else:  # one key per bucket of members: two buckets in use
        assert lines[0].startswith("operator 0 transformWithStateInPandasExec (3 partitions")
        assert lines[1].startswith("  state members: 2 rows (per partition ")
        key = spark.sql("SELECT pmod(xxhash64(CAST(99 AS BIGINT)), 8) AS b").first().b
    assert len([line for line in lines if line.startswith("    key ")]) == 2

    found = cli(
        pipeline.settings, "state", "show", "--checkpoint", str(checkpoint), "--key", str(key)
    )
    assert found.returncode == 0, found.stderr
    rows = [line for line in found.stdout.splitlines() if line.startswith("    key ")]
    assert len(rows) == 1 and rows[0].startswith(f"    key {key} → ")
    value = json.loads(rows[0].split(" → ", 1)[1])
    if engine == "jvm":  # the waiting variable's one field, its boards
        assert [board["board_id"] for board in value] == ["waiting000000000000000000"]
    else:
        assert value["pending_board_id"] == ["waiting000000000000000000"]
        assert value["pending_member_id"] == [99]

    unknown = cli(
        pipeline.settings, "state", "show", "--checkpoint", str(checkpoint), "--var", "nope"
    )
    assert unknown.returncode != 0
    variables = ["member", "waiting"] if engine == "jvm" else ["members"]
    assert "no state variable 'nope'" in unknown.stderr
    assert all(variable in unknown.stderr for variable in variables)
    missing = cli(pipeline.settings, "state", "show", "--checkpoint", str(tmp_path / "none"))
    assert missing.returncode != 0 and "no checkpoint at" in missing.stderr
