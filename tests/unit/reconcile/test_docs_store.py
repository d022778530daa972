"""Data Docs kept in the database: a run's site stored whole but for the vendored assets (each
host serves its own), stored again replaces it, and only the newest sites are kept."""

from __future__ import annotations

from pathlib import Path

from boardstream.reconcile.evidence import docs_store


def site(root: Path, name: str, pages: dict[str, str]) -> Path:
    for path, text in pages.items():
        (root / name / path).parent.mkdir(parents=True, exist_ok=True)
        (root / name / path).write_text(text)
    return root / name


def test_a_site_is_stored_without_its_vendored_assets_and_read_back(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db'}"
    built = site(
        tmp_path,
        "reconciliation-1",
        {
            "index.html": "index",
            "validations/a/b.html": "b",
            "static/styles/x.css": "own css",
            "static/vendor/bootstrap/bootstrap.min.css": "vendored",
        },
    )
    docs_store.save(url, built, keep_runs=3)
    assert docs_store.sites(url) == {"reconciliation-1"}
    assert docs_store.read(url, "reconciliation-1", "validations/a/b.html") == b"b"
    assert docs_store.read(url, "reconciliation-1", "static/styles/x.css") == b"own css"
    assert (
        docs_store.read(url, "reconciliation-1", "static/vendor/bootstrap/bootstrap.min.css")
        is None
    )
    assert docs_store.read(url, "reconciliation-1", "nothing.html") is None
    assert docs_store.shared("static/vendor/jquery/jquery.min.js")
    assert not docs_store.shared("static/styles/x.css")

    (built / "validations" / "a" / "b.html").unlink()  # built again: the old files go
    (built / "index.html").write_text("index 2")
    docs_store.save(url, built, keep_runs=3)
    assert docs_store.read(url, "reconciliation-1", "index.html") == b"index 2"
    assert docs_store.read(url, "reconciliation-1", "validations/a/b.html") is None


def test_only_the_newest_sites_are_kept(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db'}"
    for n in (8, 9, 10, 11):  # stored within a millisecond, and "10" sorts before "9" as text
        docs_store.save(url, site(tmp_path, f"reconciliation-{n}", {"index.html": str(n)}), 2)
    assert docs_store.sites(url) == {"reconciliation-10", "reconciliation-11"}
