"""Data Docs that work offline: every CDN address GX's pages use is rewritten to a vendored copy
that exists, integrity attributes and what is not vendored are dropped, site links are re-rooted
per page depth, anything still remote is logged, and only the newest runs' sites are kept.
Pages are hand-written here; the real GX pages are covered in test_expectations.py."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from boardstream.reconcile.evidence.data_docs import ASSETS, LOCAL, VENDOR, _prune, offline, publish

BOOTSTRAP_CSS = "https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css"
JQUERY = "https://code.jquery.com/jquery-3.7.1.min.js"
LOGO = "https://great-expectations-web-assets.s3.us-east-2.amazonaws.com/logo-long.png"

PAGE = (
    f'<link rel="stylesheet" href="{BOOTSTRAP_CSS}" integrity="sha384-abc" '
    'crossorigin="anonymous">\n'
    f'<script src="{JQUERY}" integrity="sha256-xyz" crossorigin="anonymous"></script>\n'
    '<script src="https://cdn.jsdelivr.net/npm/vega@5"></script>\n'
    '<link rel="stylesheet" href="https://cdn.jsdelivr.net/npm/@forevolve/bootstrap-dark@1.0.0/'
    'dist/css/toggle-bootstrap-dark.min.css" />\n'
    f'<img src="{LOGO}">\n'
    '<link rel="icon" href="../static/images/favicon.ico">\n'
    '<a href="https://greatexpectations.io/">GX</a>\n'
)


def test_every_cdn_address_has_a_vendored_copy() -> None:
    assert len(LOCAL) == 12
    assert sorted(path for path in set(LOCAL.values()) if not (ASSETS / path).is_file()) == []


def test_a_page_loads_everything_from_its_site() -> None:
    assert offline(PAGE, "../../") == (
        '<link rel="stylesheet" href="../../static/vendor/bootstrap/bootstrap.min.css">\n'
        '<script src="../../static/vendor/jquery/jquery.min.js"></script>\n'
        '<img src="../../static/images/logo-long.png">\n'
        '<link rel="icon" href="../../static/images/favicon.ico">\n'
        '<a href="https://greatexpectations.io/">GX</a>\n'
    )


def test_a_page_at_the_sites_root_links_relative_to_itself() -> None:
    page = (
        '<link href="./static/styles/a.css"><script src="static/b.js"></script>'
        '<link href="https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/'
        'bootstrap-table-filter-control.css">'
    )
    assert offline(page, "") == (
        '<link href="static/styles/a.css"><script src="static/b.js"></script>'
        '<link href="static/vendor/bootstrap-table/bootstrap-table-filter-control.min.css">'
    )


def _page(path: Path, html: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html)


def test_publish_rewrites_every_page_for_its_depth_and_vendors_the_assets(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    site = tmp_path / "docs" / "reconciliation-7"
    _page(site / "index.html", f'<script src="{JQUERY}"></script>')
    deep = site / "validations" / "reconcile" / "run.html"
    _page(deep, f'<script src="{JQUERY}"></script><img src="https://example.com/x.png">')

    with caplog.at_level(logging.WARNING, logger="boardstream.reconcile.evidence.data_docs"):
        index = publish(site, keep_runs=5)

    assert index == site / "index.html"
    assert index.read_text() == '<script src="static/vendor/jquery/jquery.min.js"></script>'
    assert deep.read_text() == (
        '<script src="../../static/vendor/jquery/jquery.min.js"></script>'
        '<img src="https://example.com/x.png">'
    )
    assert (site / VENDOR / "jquery" / "jquery.min.js").read_bytes() == (
        ASSETS / "jquery" / "jquery.min.js"
    ).read_bytes()
    assert [r.getMessage() for r in caplog.records] == [
        f"Data Docs page {deep} still loads https://example.com/x.png from the internet"
    ]


def _site(docs: Path, name: str, mtime_s: int) -> Path:
    site = docs / name
    _page(site / "index.html", name)
    os.utime(site / "index.html", (mtime_s, mtime_s))
    return site


def test_only_the_newest_sites_by_their_index_are_kept(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    # Named against their age: the index's time decides, not the name.
    _site(docs, "reconciliation-1", 4_000)
    _site(docs, "reconciliation-2", 1_000)
    _site(docs, "reconciliation-3", 3_000)
    _site(docs, "reconciliation-4", 2_000)
    (docs / "not-a-site").mkdir()
    _prune(docs, 2)
    assert sorted(p.name for p in docs.iterdir()) == [
        "not-a-site",
        "reconciliation-1",
        "reconciliation-3",
    ]
    _prune(docs, 2)
    assert sorted(p.name for p in docs.iterdir()) == [
        "not-a-site",
        "reconciliation-1",
        "reconciliation-3",
    ]


def test_publish_prunes_the_sites_beside_the_new_one(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _site(docs, "reconciliation-1", 1_000)
    _site(docs, "reconciliation-2", 2_000)
    site = docs / "reconciliation-3"
    _page(site / "index.html", "<p>run 3</p>")  # written now: the newest
    publish(site, keep_runs=2)
    assert sorted(p.name for p in docs.iterdir()) == ["reconciliation-2", "reconciliation-3"]
