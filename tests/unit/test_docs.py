"""docs/SETTINGS.md documents every setting the code has, under the env var that sets it; the
README starts with the two commands; every relative link of the README and the docs/ pages
resolves."""

from __future__ import annotations

import re
from pathlib import Path

from boardstream.settings import PROJECT_ROOT, Settings


def test_the_settings_page_lists_every_setting() -> None:
    settings = (PROJECT_ROOT / "docs" / "SETTINGS.md").read_text()
    missing = [
        name for name in Settings.model_fields if f"`BOARDSTREAM_{name.upper()}`" not in settings
    ]
    assert missing == []


def test_readme_starts_with_the_two_commands() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    assert [line.split()[0] for line in first_block.splitlines()] == ["bin/demo", "bin/test"]


def test_every_relative_link_of_the_readme_and_the_docs_resolves() -> None:
    """Each relative link names a file that exists and, into a Markdown page, a heading of it
    (GitHub's anchors: the heading in lower case, punctuation dropped, spaces as hyphens)."""
    pages = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page)):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def _prose(page: Path) -> str:
    return re.sub(r"```.*?```", "", page.read_text(), flags=re.S)


def _anchors(page: Path) -> set[str]:
    headings = re.findall(r"^#+ (.*)$", _prose(page), re.M)
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings
    }
