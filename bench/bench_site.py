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
   the images of ``_images/`` it shows; shared assets (``_static``, ``_vendor``) are not counted.

The issue sets targets for 1 and 2; the size targets (site ≤ 100 MB, page ≤ 10 MB) are this file's
proposal, so a learner on a slow line is not kept waiting.

Run on its own with ``python bench/bench_site.py``; ``bench/run.py`` collects :func:`rows` into
the benchmark table.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")
BUILD = [str(JUPYTER_BOOK), "build", ".", "-W", "-n", "--keep-going"]
CLEAN_TARGET_S = 180.0
REBUILD_TARGET_S = 20.0
SITE_TARGET_MB = 100.0
PAGE_TARGET_MB = 10.0
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


def rows() -> list[dict]:
    """Four rows: clean build, cached rebuild after one edit (s), site size, heaviest page (MB).

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
    ]


if __name__ == "__main__":
    os.chdir(ROOT)
    for row in rows():
        print(
            f"{row['name']:75} {row['value']:8.2f} {row['unit']:2}  target {row['target']}  "
            f"{'ok' if row['ok'] else 'NOT MET'}"
        )
