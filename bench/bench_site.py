"""Website build performance: clean build, cached rebuild after one edit, site and page sizes.

The book is copied (sources only: no ``_build``, no ``.venv``; ``node_modules`` linked) into a
temporary folder and built there with the README's build command, so the measurement starts from
an empty notebook cache and leaves the repository's own ``_build`` alone:

1. **clean build**: ``jupyter-book build . -W -n --keep-going`` with no cache, every notebook
   executed (target ≤ 3 min on the course's 2-core machine);
2. **cached rebuild after editing one chapter**: one code cell of the first notebook chapter in
   ``_toc.yml`` gets a comment appended (so its cached execution no longer matches and it is
   re-executed, the rest come from the cache), then the same command again (target ≤ 20 s);
3. **site size**: every file of ``_build/html`` (vendored JavaScript included);
4. **heaviest page**: the largest page counted as its HTML (embedded widget state included) plus
   the images of ``_images/`` it shows; shared assets (``_static``, ``_vendor``) are not counted;
5. **page weight as a reader's browser sees it**: every page opened in headless Chromium
   (Debian's ``chromium``) from a local HTTP server with every outside request blocked,
   counting the uncompressed bytes of everything the page requests (HTML, scripts, stylesheets,
   fonts, images, MathJax's on-demand files), each distinct URL once, until the network is idle.
   Rows: the median page, the heaviest page with widgets (saved widget state), and the largest
   single files requested (shared by many pages, so a browser cache pays for them once).

The targets of 1 and 2 keep the author's loop short; those of 5 (median page ≤ 1.5 MB, widget
pages ≤ 2.5 MB) and the size targets of 3 and 4 (site ≤ 100 MB, page ≤ 10 MB) keep a learner on
a slow or metered line from waiting.

Run on its own with ``python bench/bench_site.py``; ``python bench/bench_site.py weight [SITE]``
measures only the page weight of an already built site (``_build/html`` by default).
``bench/run.py`` collects :func:`rows` into the benchmark table.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")
BUILD = [str(JUPYTER_BOOK), "build", ".", "-W", "-n", "--keep-going"]
CLEAN_TARGET_S = 180.0
REBUILD_TARGET_S = 20.0
SITE_TARGET_MB = 100.0
PAGE_TARGET_MB = 10.0
#: Everything a page requests, uncompressed (tests/site/test_site.py holds the pages to them).
MEDIAN_PAGE_TARGET_MB = 1.5
WIDGET_PAGE_TARGET_MB = 2.5
#: Folders of the built site that hold assets, not pages.
NOT_PAGES = {"_static", "_sources", "_images", "_vendor", "_sphinx_design_static", "_panels_static"}
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
#: Not part of the book's sources (generated, environments, caches, test output).
IGNORE = shutil.ignore_patterns(
    "_build",
    ".venv",
    "node_modules",
    ".git",
    ".hypothesis",
    ".pytest_cache",
    ".ruff_cache",
    "__pycache__",
    "*.egg-info",
    ".ipynb_checkpoints",
    "_artifacts",
    "out",
    ".lead",
)


def copy_book(dest: Path) -> Path:
    """Copy the book's sources into ``dest/book``, linking ``node_modules``; return the copy."""
    book = dest / "book"
    shutil.copytree(ROOT, book, ignore=IGNORE, symlinks=True)
    if (ROOT / "node_modules").is_dir():
        (book / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
    return book


def timed_build(book: Path) -> tuple[float, int]:
    """Run the README's build command in ``book``; return (wall seconds, exit code)."""
    start = time.perf_counter()
    proc = subprocess.run(
        BUILD, cwd=book, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    return time.perf_counter() - start, proc.returncode


def first_notebook_chapter(book: Path) -> Path:
    """The first ``.ipynb`` listed in ``_toc.yml``."""
    toc = yaml.safe_load((book / "_toc.yml").read_text(encoding="utf-8"))
    files: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "file" in node:
                files.append(str(node["file"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    for f in files:
        path = book / f"{Path(f).with_suffix('')}.ipynb"
        if path.is_file():
            return path
    msg = f"expected a notebook chapter in {book / '_toc.yml'}, found none among {files}"
    raise FileNotFoundError(msg)


def edit_one_code_cell(notebook: Path) -> None:
    """Append a comment to the notebook's first code cell (changes its execution hash)."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            src = cell["source"]
            text = "".join(src) if isinstance(src, list) else src
            cell["source"] = text + "\n# edited by bench/bench_site.py"
            break
    notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def site_bytes(site: Path) -> int:
    return sum(p.stat().st_size for p in site.rglob("*") if p.is_file())


def heaviest_page(site: Path) -> tuple[str, int]:
    """The page with the most bytes of its own (HTML + its images in ``_images/``)."""
    best = ("", 0)
    for page in site.rglob("*.html"):
        rel = page.relative_to(site)
        if rel.parts[0] in {"_static", "_sources", "_vendor", "_images"}:
            continue
        html = page.read_text(encoding="utf-8", errors="replace")
        images = {
            (page.parent / src).resolve()
            for src in re.findall(r'src="([^"#?]*_images/[^"#?]+)"', html)
        }
        size = page.stat().st_size + sum(p.stat().st_size for p in images if p.is_file())
        if size > best[1]:
            best = (rel.as_posix(), size)
    return best


def site_pages(site: Path) -> list[str]:
    """The HTML pages of ``site`` (posix paths), without the root redirect ``index.html``."""
    return sorted(
        p.relative_to(site).as_posix()
        for p in site.rglob("*.html")
        if not (set(p.relative_to(site).parts[:-1]) & NOT_PAGES)
        and not any(part.startswith(".") for part in p.relative_to(site).parts)
        and p.relative_to(site).as_posix() != "index.html"
    )


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def page_weights(site: Path, pages: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Bytes each page requests in headless Chromium, offline.

    Returns
    -------
    dict
        ``{page: {"bytes": total, "widgets": bool, "requests": {path: bytes}}}``; ``path`` is the
        request's path in the site, each distinct URL counted once; requests outside the site are
        blocked (and listed under ``"blocked"``).
    """
    from playwright.sync_api import sync_playwright

    pages = site_pages(site) if pages is None else pages
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    out: dict[str, dict[str, Any]] = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=chromium,
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
            )
            for rel in pages:
                out[rel] = measure_page(browser, base, rel)
                out[rel]["widgets"] = WIDGET_STATE in (site / rel).read_text(encoding="utf-8")
            browser.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    return out


def measure_page(browser: Any, base: str, rel: str) -> dict[str, Any]:
    """Open ``base + rel`` (1280 x 900, outside requests blocked); sum what it requested.

    The page is measured once it has settled (``tests/site/test_site.py``'s ``PageVisit.settle``:
    loaded, fonts and images done, widgets drawn, no request under way), events rather than
    Playwright's "networkidle", which on a busy machine was seen never to come.
    """
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "site")]
    try:
        from test_site import PageVisit
    finally:
        sys.path.remove(str(ROOT / "tests"))
        sys.path.remove(str(ROOT / "tests" / "site"))
    visit = PageVisit(browser, base, rel)
    responses: list[Any] = []
    visit.page.on("response", lambda r: responses.append(r))
    try:
        visit.page.goto(base + rel, wait_until="load")
        visit.page.evaluate(
            "async () => { if (window.MathJax && MathJax.startup && MathJax.startup.promise)"
            " await MathJax.startup.promise; await document.fonts.ready; }"
        )
        visit.settle()
        sizes: dict[str, int] = {}
        for resp in responses:
            url = resp.url.split("#")[0]
            if url in sizes or not url.startswith(base) or resp.status >= 300:
                continue
            sizes[url[len(base) :].split("?")[0]] = len(resp.body())
    finally:
        visit.close()
    outside = "request outside the site (blocked): "
    blocked = [p[len(outside) :] for p in visit.problems if p.startswith(outside)]
    return {"bytes": sum(sizes.values()), "requests": sizes, "blocked": blocked}


def weight_rows(site: Path, weights: dict[str, dict[str, Any]] | None = None) -> list[dict]:
    """Rows: median page, heaviest widget page, heaviest page, the three largest files (MB)."""
    weights = page_weights(site) if weights is None else weights
    totals = {rel: w["bytes"] / 1e6 for rel, w in weights.items()}
    median = statistics.median(totals.values())
    widget_pages = {rel: mb for rel, mb in totals.items() if weights[rel]["widgets"]}
    heaviest = max(totals, key=totals.__getitem__)
    files: dict[str, int] = {}
    users: dict[str, int] = {}
    for w in weights.values():
        for path, n in w["requests"].items():
            files[path] = n
            users[path] = users.get(path, 0) + 1
    blocked = sorted({u for w in weights.values() for u in w["blocked"]})
    rows = [
        {
            "name": f"site: median page weight over {len(totals)} pages, everything requested"
            + (f" [{len(blocked)} outside requests blocked]" if blocked else ""),
            "value": round(median, 2),
            "unit": "MB",
            "target": f"≤ {MEDIAN_PAGE_TARGET_MB:g} MB",
            "ok": median <= MEDIAN_PAGE_TARGET_MB and not blocked,
        }
    ]
    if widget_pages:
        top = max(widget_pages, key=widget_pages.__getitem__)
        rows.append(
            {
                "name": f"site: heaviest of {len(widget_pages)} widget pages ({top})",
                "value": round(widget_pages[top], 2),
                "unit": "MB",
                "target": f"≤ {WIDGET_PAGE_TARGET_MB:g} MB",
                "ok": widget_pages[top] <= WIDGET_PAGE_TARGET_MB,
            }
        )
    rows.append(
        {
            "name": f"site: heaviest page ({heaviest})",
            "value": round(totals[heaviest], 2),
            "unit": "MB",
            "target": "–",
            "ok": None,
        }
    )
    for path in sorted(files, key=files.__getitem__, reverse=True)[:3]:
        rows.append(
            {
                "name": f"site: large file {path} (requested by {users[path]} pages)",
                "value": round(files[path] / 1e6, 2),
                "unit": "MB",
                "target": "–",
                "ok": None,
            }
        )
    return rows


def rows() -> list[dict]:
    """Clean build, cached rebuild after one edit (s), site size, heaviest page, page weights (MB).

    Returns
    -------
    list of dict
        Keys ``name``, ``value``, ``unit``, ``target``, ``ok``. A build that exits non-zero
        (a Sphinx warning under ``-W``, a failing notebook) is reported with ``ok`` False and
        its exit code in the name.
    """
    with tempfile.TemporaryDirectory(prefix="bench_site_") as tmp:
        book = copy_book(Path(tmp))
        clean_s, clean_rc = timed_build(book)
        chapter = first_notebook_chapter(book)
        edit_one_code_cell(chapter)
        rebuild_s, rebuild_rc = timed_build(book)
        site = book / "_build" / "html"
        total = site_bytes(site) / 1e6
        page, page_bytes = heaviest_page(site)
        weight = weight_rows(site)

    def note(rc: int) -> str:
        return "" if rc == 0 else f" [build exited {rc}]"

    return [
        {
            "name": f"site: clean build, every notebook executed{note(clean_rc)}",
            "value": round(clean_s, 1),
            "unit": "s",
            "target": f"≤ {CLEAN_TARGET_S:g} s",
            "ok": clean_rc == 0 and clean_s <= CLEAN_TARGET_S,
        },
        {
            "name": f"site: cached rebuild after editing {chapter.relative_to(book)}"
            f"{note(rebuild_rc)}",
            "value": round(rebuild_s, 1),
            "unit": "s",
            "target": f"≤ {REBUILD_TARGET_S:g} s",
            "ok": rebuild_rc == 0 and rebuild_s <= REBUILD_TARGET_S,
        },
        {
            "name": "site: total size of _build/html",
            "value": round(total, 1),
            "unit": "MB",
            "target": f"≤ {SITE_TARGET_MB:g} MB",
            "ok": total <= SITE_TARGET_MB,
        },
        {
            "name": f"site: heaviest page ({page}, HTML + its images)",
            "value": round(page_bytes / 1e6, 2),
            "unit": "MB",
            "target": f"≤ {PAGE_TARGET_MB:g} MB",
            "ok": page_bytes / 1e6 <= PAGE_TARGET_MB,
        },
        *weight,
    ]


if __name__ == "__main__":
    os.chdir(ROOT)
    if sys.argv[1:2] == ["weight"]:
        chosen = weight_rows(Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "_build" / "html")
    else:
        chosen = rows()
    for row in chosen:
        print(
            f"{row['name']:75} {row['value']:8.2f} {row['unit']:2}  target {row['target']}  "
            f"{ {True: 'ok', False: 'NOT MET', None: '–'}[row['ok']] }"
        )
