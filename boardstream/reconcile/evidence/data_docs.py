"""Data Docs a browser can show offline, one site per reconciliation run.

GX 1.x's page templates load Bootstrap, jQuery, bootstrap-table, Font Awesome and more from
public CDNs (hard-coded in ``great_expectations/render/view/templates``; a site's custom views
are consulted after GX's own, so they cannot replace them). Offline, a page is unstyled and the
index's results list, which bootstrap-table fills in, stays empty. So after each build the pages
are rewritten to the copies vendored in ``data_docs_assets/`` (the versions GX names, each with
its licence), copied into the site's ``static/vendor/``. Vega (graphs of distribution
expectations, of which the reconciliation suite has none) and the optional dark-mode stylesheet
are dropped rather than vendored.

Each run gets a site of its own, ``<docs dir>/<run name>/``: GX's index lists only what its
(in-memory) stores hold and deletes the pages of anything else, so a shared site would keep
just the latest run. The oldest runs' sites are deleted past the retention.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from pathlib import Path

logger = logging.getLogger(__name__)

ASSETS = Path(__file__).parent / "data_docs_assets"
VENDOR = "static/vendor"
INDEX = "index.html"

# Every CDN address GX 1.24's templates use, and the vendored file that replaces it.
LOCAL = {
    "https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css": (
        "bootstrap/bootstrap.min.css"
    ),
    "https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js": (
        "bootstrap/bootstrap.min.js"
    ),
    "https://code.jquery.com/jquery-3.7.1.min.js": "jquery/jquery.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/popper.js/1.12.9/umd/popper.min.js": (
        "popper/popper.min.js"
    ),
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.css": (
        "bootstrap-table/bootstrap-table.min.css"
    ),
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.js": (
        "bootstrap-table/bootstrap-table.min.js"
    ),
    "https://unpkg.com/bootstrap-table@1.19.1/dist/extensions/filter-control/"
    "bootstrap-table-filter-control.min.js": (
        "bootstrap-table/bootstrap-table-filter-control.min.js"
    ),
    # GX names 1.19.0's stylesheet of the extension, minified or not; 1.19.1's is the same.
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/"
    "bootstrap-table-filter-control.min.css": (
        "bootstrap-table/bootstrap-table-filter-control.min.css"
    ),
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/"
    "bootstrap-table-filter-control.css": "bootstrap-table/bootstrap-table-filter-control.min.css",
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/css/"
    "bootstrap-datepicker.min.css": "bootstrap-datepicker/bootstrap-datepicker.min.css",
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/js/"
    "bootstrap-datepicker.min.js": "bootstrap-datepicker/bootstrap-datepicker.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.6.0/css/all.min.css": (
        "fontawesome/css/all.min.css"
    ),
}
_CDN = re.compile("|".join(re.escape(url) for url in LOCAL))
_DROPPED = re.compile(
    r'<script src="https://cdn\.jsdelivr\.net/npm/vega[^"]*"></script>\n?'
    r'|<link rel="stylesheet" href="https://cdn\.jsdelivr\.net/npm/@forevolve/[^"]*" */>\n?'
)
# GX's logo, from its S3 bucket (the light one in the page, a dark one in the dark-mode CSS):
# the site's own static/images has the light one.
_LOGO = re.compile(r"https://great-expectations-web-assets\.s3\.[\w.-]+\.amazonaws\.com/[^\"')]+")
# A site-relative link to static/; GX counts the favicon's "../" one short on validation pages.
_STATIC = re.compile(r'((?:src|href)=")(?:\.\.?/)*static/')
# Subresource integrity of CDN copies; the local ones are served by the same origin.
_SRI = re.compile(r' integrity="[^"]*" crossorigin="anonymous"')
_REMOTE = re.compile(r'<(?:script|link|img)\b[^>]*\b(?:src|href)="(https?://[^"]+)"')


def offline(page: str, site_root: str) -> str:
    """``page`` with every resource it loads served from the site (``site_root``: the relative
    path from the page's folder to the site's root, ``""`` or ending in ``/``)."""
    page = _STATIC.sub(lambda link: f"{link[1]}{site_root}static/", _DROPPED.sub("", page))
    page = _CDN.sub(lambda url: f"{site_root}{VENDOR}/{LOCAL[url[0]]}", page)
    page = _LOGO.sub(f"{site_root}static/images/logo-long.png", page)
    return _SRI.sub("", page)


def publish(site: Path, keep_runs: int) -> Path:
    """Make the run's freshly built ``site`` work offline and delete the sites of all but the
    newest ``keep_runs`` runs beside it; the site's index page."""
    shutil.copytree(ASSETS, site / VENDOR, dirs_exist_ok=True)
    for page in site.rglob("*.html"):
        root = os.path.relpath(site, page.parent).replace(os.sep, "/") + "/"
        html = offline(page.read_text(), "" if root == "./" else root)
        page.write_text(html)
        for url in _REMOTE.findall(html):
            logger.warning("Data Docs page %s still loads %s from the internet", page, url)
    _prune(site.parent, keep_runs)
    return site / INDEX


def _prune(docs_dir: Path, keep_runs: int) -> None:
    """Delete all but the newest ``keep_runs`` run sites (by their index's modification time)."""
    sites = sorted(
        (index.parent for index in docs_dir.glob(f"*/{INDEX}")),
        key=lambda site: (site / INDEX).stat().st_mtime_ns,
        reverse=True,
    )
    for site in sites[keep_runs:]:
        shutil.rmtree(site)
        logger.info("Data Docs of %s deleted (past the newest %s runs)", site.name, keep_runs)
