"""The preflight's database check on its own: a SQLite file under a var dir no job has used yet
is one the platform makes, not a database that "did not answer" (``bench/compare`` starts its
jobs on such var dirs), and a database that is down is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from boardstream.errors import ServiceUnreachableError
from boardstream.preflight import require_database
from boardstream.settings import Settings


def test_a_sqlite_database_in_a_folder_not_made_yet_answers(tmp_path: Path) -> None:
    fresh = tmp_path / "bench" / "run" / "boardstream"
    settings = Settings(var_dir=fresh)  # the default database: SQLite under var_dir
    require_database(settings, "board-detail-join")
    assert (fresh / "boardstream.db").is_file()


def test_a_database_that_is_down_is_named(tmp_path: Path) -> None:
    settings = Settings(
        var_dir=tmp_path, database_url="postgresql+psycopg2://u:secret@127.0.0.1:1/boardstream"
    )
    with pytest.raises(ServiceUnreachableError) as refused:
        require_database(settings, "board-detail-join")
    message = str(refused.value)
    assert message.startswith(
        "board-detail-join not started: the database at postgresql+psycopg2://u:***@127.0.0.1:1/"
        "boardstream did not answer ("
    ), message
    assert "secret" not in message
