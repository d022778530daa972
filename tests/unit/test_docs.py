"""The README documents every setting the code has, under the env var that sets it."""

from __future__ import annotations

from boardstream.settings import PROJECT_ROOT, Settings


def test_readme_lists_every_setting() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    missing = [
        name for name in Settings.model_fields if f"`BOARDSTREAM_{name.upper()}`" not in readme
    ]
    assert missing == []


def test_readme_starts_with_the_two_commands() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    assert [line.split()[0] for line in first_block.splitlines()] == ["bin/demo", "bin/test"]
