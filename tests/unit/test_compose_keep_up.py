"""bin/compose-run's ``--keep-up`` then ``--attach``: the ``.env`` of a stack left up outlives
the run that made it (it was made in a temporary directory and removed with it, so ``--attach``
found nothing), and is removed once a run takes that stack down; a ``.env`` the user gives is
never removed. The phases that need Docker are replaced here: a real run is
tests/integration/test_compose_run.py (long)."""

from __future__ import annotations

from pathlib import Path

import pytest

from boardstream.entrypoints import compose
from boardstream.entrypoints.compose import RunOptions, run_for_real
from boardstream.entrypoints.compose.project import Project


class _Engine:
    def __init__(self, directory: Path) -> None:
        pass

    def ensure(self) -> None:
        pass

    def stop(self) -> None:
        pass


@pytest.fixture
def downs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Path]:
    """The phases without Docker; returns the ``.env`` of each stack taken down."""
    taken_down: list[Path] = []
    monkeypatch.setenv("BOARDSTREAM_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.setattr(compose, "Engine", _Engine)
    for name, value in {
        "lower_priority": None,
        "ensure_compose": None,
        "build_standins": [],
        "check_topics": None,
        "run_demo": {},
        "screenshot": "shot.png",
        "scale_workers": 2,
        "image_sizes": {},
    }.items():
        monkeypatch.setattr(compose, name, lambda *args, value=value, **kwargs: value)
    monkeypatch.setattr(compose.Report, "write", lambda self: None)

    def bring_up(self: Project, build: bool) -> None:
        self.is_up = True

    def down(self: Project) -> dict[str, list[str]]:
        assert self.env_file.exists(), "the stack is taken down with its .env"
        taken_down.append(self.env_file)
        self.is_up = False
        return {"container": [], "network": [], "volume": []}

    def attach(self: Project) -> None:
        self.is_up = True

    monkeypatch.setattr(Project, "bring_up", bring_up)
    monkeypatch.setattr(Project, "down", down)
    monkeypatch.setattr(Project, "attach", attach)
    return taken_down


def options(**changes: object) -> RunOptions:
    base = {
        "port_base": None,
        "no_pull": False,
        "keep_up": False,
        "keep_daemon": False,
        "full_priority": False,
        "attach": None,
        "no_build": False,
        "skip_demo": False,
        "generator": {},
    }
    return RunOptions(**(base | changes))  # type: ignore[arg-type]


def test_a_stack_left_up_keeps_its_env_until_an_attached_run_takes_it_down(
    downs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_for_real(options(keep_up=True)) == 0
    kept = tmp_path / "var" / "compose-run" / "env" / ".env"
    assert kept.exists() and downs == []
    assert oct(kept.parent.stat().st_mode & 0o777) == "0o700"
    assert oct(kept.stat().st_mode & 0o777) == "0o600"
    assert f"bin/compose-run --attach {kept}" in capsys.readouterr().out
    assert run_for_real(options(attach=kept)) == 0
    assert downs == [kept] and not kept.exists()


def test_a_run_that_takes_its_stack_down_leaves_no_env(downs: list[Path]) -> None:
    assert run_for_real(options()) == 0
    (env,) = downs
    assert not env.parent.exists()


def test_an_env_the_user_gives_is_left_where_it_is(downs: list[Path], tmp_path: Path) -> None:
    mine = tmp_path / "mine" / ".env"
    mine.parent.mkdir()
    mine.write_text("AIRFLOW_PORT=8080\n")
    assert run_for_real(options(attach=mine)) == 0
    assert downs == [mine] and mine.read_text() == "AIRFLOW_PORT=8080\n"
